// Package e2e runs the example pod the way a user runs it: images built
// FROM scratch from this tree, `claw up` on Docker Compose, the reference
// runners' conversations through cllama, and assertions on what every
// service saw. It also follows docs/first-pod.md command by command and
// checks the output the doc shows. It needs a Docker engine with Compose
// and skips without one (or under -short).
package e2e

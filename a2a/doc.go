// Package a2a holds the A2A wire model shared by every part of the mesh: the
// task, message, part and card types, their A2A 1.0 (ProtoJSON) encoding, the
// conversion to and from the A2A 0.3 encoding, the JSON-RPC 2.0 envelope and
// the protocol's error codes.
//
// The Go types follow the 1.0 data model (the A2A 1.0 a2a.proto, package lf.a2a.v1) and
// marshal to its JSON form directly; 0.3 shapes are produced and accepted by
// the functions in v03.go. Task folding (Task.Apply) is pure and lives here so
// every process folds an event log the same way.
//
// This package imports the standard library only.
package a2a

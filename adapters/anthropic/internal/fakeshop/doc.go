// Package fakeshop is the payment and mail API this adapter's tests and
// example charge through: a loopback server that counts every effect with
// the key its request carried, and the two harness tools that call it.
//
// Each adapter module keeps its own copy, so that its example and tests
// import no internal package of another module (a module is built and
// published alone); the copies are the same file and stay so.
package fakeshop

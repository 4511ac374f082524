// Package fakeshop is the payment and mail API the adapters' tests and
// examples charge through: a loopback server that counts every effect with
// the key its request carried, and the two harness tools that call it. It
// lives in the core module so that every adapter module shares one copy.
package fakeshop

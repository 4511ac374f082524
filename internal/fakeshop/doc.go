// Package fakeshop is the payment and mail API that the adapters' tests
// and example agents charge through: a loopback server that counts every
// effect with the key its request carried, and the two harness tools that
// call it.
//
// It lives in the core module's internal tree, so that every adapter
// module (whose import paths begin with the core's) can import it, and no
// program outside the repository can.
package fakeshop

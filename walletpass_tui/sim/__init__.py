"""The simulated Wallet Pass Service: its API, an event generator and a delivery engine.

Used by ``demo``, by the tests and by anyone testing their own receiver. Body and template shapes are
the simulator's invention (the spec leaves them open); nothing outside this package depends on them.
"""

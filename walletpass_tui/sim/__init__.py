"""The simulated Wallet Pass Service: its API, an event generator and a delivery engine."""

"""The simulated Wallet Pass Service: its API, an event generator and a delivery engine.

Used by ``demo``, by the tests and by anyone testing their own receiver. Body and template shapes are
the simulator's invention (the spec leaves them open); nothing outside this package depends on them.
"""

from walletpass_tui.sim.clock import Clock, FakeClock, ScaledClock
from walletpass_tui.sim.engine import (
    ANSWER_DEADLINE_S,
    CONNECTION_ERROR,
    RETRY_WAITS,
    TIMEOUT,
    Attempt,
    Delivery,
    DeliveryEngine,
    DeliveryResult,
    Message,
    Target,
    format_offset,
    format_wait,
)
from walletpass_tui.sim.events import SAMPLE_TEMPLATES, event_body, new_api_key, new_secret
from walletpass_tui.sim.service import SimEndpoint, SimError, SimulatedService, UnknownEndpointError

__all__ = [
    "ANSWER_DEADLINE_S",
    "CONNECTION_ERROR",
    "RETRY_WAITS",
    "SAMPLE_TEMPLATES",
    "TIMEOUT",
    "Attempt",
    "Clock",
    "Delivery",
    "DeliveryEngine",
    "DeliveryResult",
    "FakeClock",
    "Message",
    "ScaledClock",
    "SimEndpoint",
    "SimError",
    "SimulatedService",
    "Target",
    "UnknownEndpointError",
    "event_body",
    "format_offset",
    "format_wait",
    "new_api_key",
    "new_secret",
]

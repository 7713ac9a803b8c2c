"""The self-hosted relay: one stable HTTPS URL registered with the service, deliveries fanned out.

* ``server/``: the separately deployed relay (``relay serve``): ingress, channels and tokens,
  storage, Server-Sent Events out.
* ``link/``: the laptop side: the Server-Sent Events client, the low-water mark, the feed of the
  local delivery runtime, and ``relay follow``.
* ``events``: the wire format of one relayed delivery, the one module both sides share.
* ``local``: a relay and its link in one process, for ``demo --relay`` and the benchmarks.
"""

"""The self-hosted relay: one stable HTTPS URL registered with the service, deliveries fanned out.

* ``channels``: channel names, 128-bit ingress slugs, 256-bit subscriber tokens (kept as hashes).
* ``storage``: the relay's own SQLite database (WAL): schema, channels, reads.
* ``writer``: the one writer thread (group commit; 2xx only after COMMIT).
* ``ingress``: ``POST /in/{slug}``: limits -> optional edge verification -> commit -> 2xx.
* ``events``: the wire format of one relayed delivery (Server-Sent Events, JSON data).
* ``subscribe``: ``GET /channels/{slug}/events``: every stored delivery after a cursor, then live.
* ``server``: the aiohttp application, ``/healthz``, retention pruning, TLS.
* ``subscriber``: the laptop side's client: parse the stream, resume, reconnect with backoff.
* ``follow``: hand each relayed delivery to a local receiver (``relay follow``).
"""

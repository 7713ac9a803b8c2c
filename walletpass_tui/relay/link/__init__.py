"""The laptop side of a relay: follow a channel and feed its deliveries to the local runtime.

* ``subscriber``: the Server-Sent Events client (resume after a cursor, reconnect with backoff);
* ``feed``: ``RelayLink``, a feed of the delivery runtime, with its ``low_water`` mark;
* ``follow``: ``relay follow``, handing each delivery to another receiver over HTTP;
* ``channel_info``: ask the relay for a channel's ingress URL.

It shares only the wire format (``relay.events``) with the relay server (``relay.server``); an
import-linter contract keeps the two independent.
"""

"""The relay server, deployed on its own (``relay serve``): one stable HTTPS URL registered with the
service, every delivery stored and fanned out to the laptops subscribed to its channel.

* ``serve``: the process (``RelayServer``): ingress, subscribers and ``/healthz`` on one aiohttp app;
* ``ingress``: ``POST /in/{slug}``, on the same intake rules as the local receiver;
* ``channels``: names, 128-bit ingress slugs, 256-bit subscriber tokens (kept as hashes);
* ``storage`` and ``writer``: the relay's database and its one group-commit writer;
* ``fanout`` and ``subscribe``: what each channel's subscribers are sent, as Server-Sent Events.

It shares only the wire format (``relay.events``) with the laptop side (``relay.link``); an
import-linter contract keeps the two independent.
"""

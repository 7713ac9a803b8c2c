"""The relay server, deployed on its own (``relay serve``): one stable HTTPS URL registered with the
service, every delivery stored and fanned out to the laptops subscribed to its channel.

* ``serve``: the process (``RelayServer``): ingress, subscribers and ``/healthz`` on one aiohttp app;
* ``ingress``: ``POST /in/{slug}``, on the same intake rules as the local receiver;
* ``channels``: names, 128-bit ingress slugs, 256-bit subscriber tokens (kept as hashes);
* ``storage/``: the relay's database behind one protocol, with the records every back end
  writes, then one folder per back end (``sqlite/``, ``postgres/``), each with its group-commit
  writer;
* ``fanout``: each channel's recent events, subscribers and quota (``ChannelFanout``);
  ``subscribe``: what a subscriber is sent, as Server-Sent Events; ``stream``: one subscriber's
  stream, written never ahead of its socket.

It shares only the wire format (``relay.events``) with the laptop side (``relay.link``); an
import-linter contract keeps the two independent.
"""

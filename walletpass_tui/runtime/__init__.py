"""The running receiver, above what it composes (one delivery's rules in ``webhooks``, the schema
learner, a relay link handed in as a feed):

* ``local``: ``DeliveryRuntime``, the receiver running in this process (store, registry, port,
  forwarder, schema learner; opened in order, closed in reverse; ``subscribe()``);
* ``attached``: ``AttachedRuntime``, a dashboard on the receiver another process runs;
* ``instance``: the one running receiver of a home, its lock and state file;
* ``control``: the control channel attached dashboards use, and ``attachable``, the running
  receiver's side of it;
* ``demo``: the demo's wiring (the simulated service and a runtime on the demo's own data).
"""

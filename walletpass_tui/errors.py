"""The one root of every error a person may see, and how the command line reports it.

Every failure of the world (a setting, the service, the disk, the network, what a user typed) is
raised as a subclass of :class:`WalletpassError`, whose message is one sentence that says what
to do. The command line prints ``walletpass-tui: error: <message>`` and exits with the error's
``exit_status``; anything else that escapes is a bug and keeps its traceback.

::

    WalletpassError                      exit 1: a failure, one sentence on stderr
    ├── UsageError                       exit 2: what was asked cannot be done as given
    │   ├── api.topics.TopicError        a topic name that is not one of the service's
    │   ├── api.urls.UrlError            a URL outside the one URL rule
    │   ├── webhooks.target_options.HeaderError  a --forward-header that cannot be added
    │   ├── check.runner.CheckError      a check that cannot be run as asked
    │   ├── query.tree.QueryProblem  a term of a field query that cannot be read
    │   ├── sim.body_edit.BodyEditError  a --set path or assignment that cannot be applied
    │   └── sim.fixtures.FixtureError    a fixture that cannot be sent
    ├── webhooks.sources.SourceError     an --allow-source or --trust-proxy that does not parse *
    ├── webhooks.verify.SecretError      a signing secret that is not whsec_ + base64 *
    ├── webhooks.forward.ForwardError    a --forward-to route that does not parse *
    ├── relay.server.channels.ChannelError  a channel name or token that is not one *
    ├── config.errors.ConfigError        a setting or a private file that cannot be used
    │   └── webhooks.endpoint_import.EndpointExists  an endpoint imported twice
    ├── cli.common.CommandError          a command's expected failure
    ├── api.errors.ApiError              the service refused, failed or did not answer
    ├── webhooks.models.StoreError       the history cannot be read or written
    │   ├── webhooks.store.files.FilesMoved  the history's files left their paths mid-commit
    │   └── webhooks.store.read_only.Outdated  a history an older version wrote, read only
    ├── webhooks.listening.ReceiverError the receiver's port cannot be had
    ├── runtime.instance.InstanceError   the home's run directory cannot be used
    │   └── runtime.instance.AlreadyRunning  another receiver holds the home
    ├── runtime.control.ControlError     the control channel cannot be used, or refused
    ├── runtime.draw_beside.DrawRefused  the receiver would not draw a dashboard beside it
    ├── runtime.demo.DemoError           the demo cannot start
    ├── schemas.errors.SchemaError       the payload schemas cannot be read or exported
    ├── tunnel.provider.TunnelUnavailable  the tunnel cannot start, and retrying will not help
    ├── tunnel.provider.TunnelFailed     this try at the tunnel failed; retried with backoff
    ├── relay.server.serve.RelayError    the relay cannot start
    ├── relay.server.storage.errors.RelayStoreError  the relay's database cannot be used
    │   ├── relay.server.storage.errors.DatabaseUnavailable  not reachable now: 503
    │   ├── relay.server.storage.postgres.pool.PoolBusy  every pooled connection stayed busy
    │   ├── relay.server.storage.postgres.schema.NewerSchema  written by a newer relay
    │   └── relay.server.fanout.UnusableSecret  a channel's stored signing secret is not one
    ├── relay.link.failures.RelayClientError  the relay refused or cannot be reached
    │   ├── relay.link.failures.RelayAuthError  the relay refused the token
    │   └── relay.link.failures.RelayUrlError  not a relay's subscribe URL
    └── sim.endpoints.SimError           the simulated service refused
        └── sim.endpoints.UnknownEndpointError  no endpoint with that id

``*``: also a ``ValueError``; read from a command-line argument, reported as a usage error (exit 2).
``tests/test_errors.py`` compares this drawing with the classes.

A usage error raised while the arguments are checked is exit 2 whichever module raised it; a
module that reads the same kind of value from a file or the environment raises it as a failure
(``ConfigError``), since the user's command line was not at fault.
"""

from __future__ import annotations


class WalletpassError(Exception):
    """A failure a person can act on; ``str()`` is one sentence that says what to do."""

    exit_status = 1


class UsageError(WalletpassError):
    """The command was asked something it cannot do as given (exit status 2)."""

    exit_status = 2

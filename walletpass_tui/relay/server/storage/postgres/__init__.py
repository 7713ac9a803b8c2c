"""The relay on PostgreSQL (asyncpg), for any number of relay processes on one database.

* ``schema``: created and upgraded by the relay itself, under an advisory lock;
* ``pool``: the connections, and how a failure is read (the database away: fail fast);
* ``writer``: the group-commit writer, cursors per channel in commit order;
* ``listener``: the LISTEN connection, its pings and its reconnection;
* ``queries``: reads, the channel commands and pruning;
* ``storage``: ``RelayStorage`` made of those.

Loaded only when a ``postgresql://`` database is named: the SQLite relay never imports asyncpg.
"""

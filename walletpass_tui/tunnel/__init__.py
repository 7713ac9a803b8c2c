"""A public HTTPS URL for the receiver: a tunnel started, watched and read as untrusted.

::

    provider.py      what every provider answers: OpenTunnel, TunnelUnavailable, TunnelFailed
    choice.py        which provider the settings ask for, and the local address it forwards to
    cloudflared.py   the cloudflared program (a quick or a named tunnel), its output read
    output.py        a program's output, bounded by line, size and rate
    ngrok_sdk.py     ngrok's agent SDK (the [ngrok] extra), behind one seam
    ngrok_config.py  the ngrok authtoken: NGROK_AUTHTOKEN or ngrok's own configuration file
    ngrok_agent.py   an ngrok agent run by hand: its public URL from 127.0.0.1:4040
    public_url.py    the one rule for a tunnel's URL: https:// and a plain host name
    watch.py         the watcher: started, restarted with backoff, stopped; its states

Each name is imported from the module that defines it. Threats and their bounds:
docs/threats/tunnel.md.
"""

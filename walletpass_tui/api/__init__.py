"""The Wallet Pass Service as a client sees it: the client, its models and errors, and the rules for
URLs (``api.urls``) and topic names (``api.topics``).

The client (and httpx with it) is imported only when asked for, so a command that needs just the
URL or topic rules starts without loading an HTTP stack.
"""

"""``walletpass-tui check``: test your own webhook receiver the way the service and an attacker would.

``cases`` builds the battery, ``send`` posts one request to the named URL only, ``judge`` decides
pass, fail or warn, ``runner`` runs them one at a time and records each, ``report`` prints them.
"""

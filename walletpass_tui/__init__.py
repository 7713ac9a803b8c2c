"""walletpass-tui: receive, verify, inspect and replay Wallet Pass Service webhooks locally.

The version is a plain constant (pyproject.toml reads it from here), so ``--version`` costs no
package-metadata lookup.
"""

__version__ = "0.1.0"

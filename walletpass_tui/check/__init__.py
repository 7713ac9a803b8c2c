"""``walletpass-tui check``: test your own webhook receiver the way the service and an attacker would.

``cases`` builds the battery, ``send`` posts one request to the named URL only, ``judge`` decides
pass, fail or warn, ``runner`` runs them one at a time and records each, ``report`` prints them.
"""

from walletpass_tui.check.cases import Case, Expect, Request, build_cases
from walletpass_tui.check.judge import Outcome
from walletpass_tui.check.runner import (
    CaseResult,
    CheckError,
    CheckOptions,
    CheckReport,
    run_check,
    target_problem,
)

__all__ = [
    "Case",
    "CaseResult",
    "CheckError",
    "CheckOptions",
    "CheckReport",
    "Expect",
    "Outcome",
    "Request",
    "build_cases",
    "run_check",
    "target_problem",
]

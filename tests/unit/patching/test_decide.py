"""The apply/rollback/recovery decisions, from hand-made facts (no files, no target)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from variantctl.exitcodes import ExitCode
from variantctl.patching.decide import (
    BackupFacts,
    RecoverStep,
    RollbackFacts,
    already_applied,
    apply_action,
    backup_intact,
    backup_misplaced,
    committed,
    decide_rollback,
    exit_for,
    recover_step,
    status_exit,
)
from variantctl.patching.outcomes import Action
from variantctl.patching.plan import FAIL, NOOP, REFUSE, WRITE
from variantctl.patching.records import LedgerRecord, Method

ORIG = "a" * 64  # sha256 of the original
OURS = "b" * 64  # sha256 of what the apply wrote
OTHER = "c" * 64  # sha256 of someone else's edit
FILE = "/r/vllm/engine/arg_utils.py"
BACKUP = "/r/vllm/engine/arg_utils.py.bak"


def rec(**over: object) -> LedgerRecord:
    base = LedgerRecord(txn="t1", action="apply", patchset="p", fingerprint="fp", file=FILE,
                        module="vllm.engine.arg_utils", sha256_before=ORIG, sha256_after=OURS,
                        backup=BACKUP, backup_created=True, time="2026-01-01T00:00:00",
                        tool_version="0", host="local")
    return replace(base, **over)  # type: ignore[arg-type]


GOOD = BackupFacts(path=BACKUP, sha256=ORIG)


# -- apply -------------------------------------------------------------------------


@pytest.mark.parametrize(("plan", "dry_run", "action"), [
    (NOOP, False, Action.UNCHANGED), (REFUSE, False, Action.REFUSED),
    (FAIL, False, Action.ERROR), (WRITE, False, Action.APPLIED),
    (WRITE, True, Action.WOULD_APPLY), (NOOP, True, Action.UNCHANGED),
])
def test_apply_action_from_the_plan(plan: str, dry_run: bool, action: Action) -> None:
    assert apply_action(plan, dry_run=dry_run) is action


def test_an_unknown_plan_action_is_a_bug_not_a_guess() -> None:
    with pytest.raises(ValueError, match="unknown plan action"):
        apply_action("frobnicate", dry_run=False)


def test_already_applied_needs_the_same_patchset_and_the_bytes_we_wrote() -> None:
    assert already_applied(rec(), fingerprint="fp", sha256=OURS)
    assert not already_applied(None, fingerprint="fp", sha256=OURS)
    assert not already_applied(rec(), fingerprint="changed", sha256=OURS)  # patchset edited
    assert not already_applied(rec(), fingerprint="fp", sha256=OTHER)  # file edited since


def test_exit_for_actions() -> None:
    assert exit_for([Action.APPLIED, Action.UNCHANGED]) == ExitCode.OK
    assert exit_for([]) == ExitCode.OK
    assert exit_for([Action.APPLIED, Action.REFUSED]) == ExitCode.CONFLICT
    assert exit_for([Action.REFUSED, Action.MISSING]) == ExitCode.USAGE  # bad input wins
    assert exit_for([Action.ERROR, Action.APPLIED]) == ExitCode.USAGE


def test_status_exit_from_states() -> None:
    assert status_exit({"applied"}) == ExitCode.OK
    assert status_exit({"pristine"}) == ExitCode.OK
    assert status_exit({"pristine", "applied"}) == ExitCode.CONFLICT  # copies disagree
    assert status_exit({"partial", "applied"}) == ExitCode.CONFLICT
    assert status_exit({"drifted"}) == ExitCode.CONFLICT
    assert status_exit({"drifted", "missing"}) == ExitCode.USAGE
    assert status_exit({"error", "applied"}) == ExitCode.USAGE


# -- rollback ----------------------------------------------------------------------


def test_an_intact_backup_is_restored_and_ours_removed_after() -> None:
    d = decide_rollback(RollbackFacts(sha256=OURS, state="applied", record=rec(), backup=GOOD))
    assert (d.action, d.method, d.backup, d.remove_after) == (
        Action.ROLLED_BACK, Method.BACKUP, BACKUP, BACKUP)
    assert d.message == f"restore {BACKUP}"


def test_a_backup_the_apply_found_already_there_is_restored_but_kept() -> None:
    d = decide_rollback(RollbackFacts(sha256=OURS, state="applied",
                                      record=rec(backup_created=False), backup=GOOD))
    assert d.method is Method.BACKUP and d.remove_after is None


def test_a_backup_that_no_longer_holds_the_original_is_refused_unless_forced() -> None:
    wrong = BackupFacts(path=BACKUP, sha256=OTHER)
    d = decide_rollback(RollbackFacts(sha256=OURS, state="applied", record=rec(), backup=wrong,
                                      inverse=True))
    assert d.action is Action.REFUSED and d.method is None
    assert d.message == (f"backup {BACKUP} no longer holds the original (sha256 differs); "
                         "rollback --force uses the inverse transform instead")
    forced = decide_rollback(RollbackFacts(sha256=OURS, state="applied", record=rec(),
                                           backup=wrong, inverse=True, force=True))
    assert (forced.action, forced.method, forced.backup) == (
        Action.ROLLED_BACK, Method.INVERSE, None)
    assert forced.message == "inverse transform (--force)"


def test_a_backup_problem_is_the_reason_given() -> None:
    link = BackupFacts(path=BACKUP, problem=f"backup {BACKUP} is a link or not a regular file")
    d = decide_rollback(RollbackFacts(sha256=OURS, state="applied", record=rec(), backup=link))
    assert d.action is Action.REFUSED
    assert d.message.startswith(f"backup {BACKUP} is a link or not a regular file; ")


def test_a_file_changed_since_the_apply_is_refused_naming_both_hashes() -> None:
    d = decide_rollback(RollbackFacts(sha256=OTHER, state="applied", record=rec(),
                                      inverse=True))
    assert d.action is Action.REFUSED
    assert d.message == (f"file changed since variantctl applied it (sha256 {OTHER[:12]}…, "
                         f"wrote {OURS[:12]}…); rollback --force reverts with the inverse "
                         "transform")


def test_a_file_variantctl_did_not_patch_is_refused_unless_forced() -> None:
    facts = RollbackFacts(sha256=OTHER, state="applied", record=None, inverse=True)
    d = decide_rollback(facts)
    assert d.action is Action.REFUSED
    assert d.message.startswith("not applied by variantctl (no ledger entry in this root)")
    assert decide_rollback(replace(facts, force=True)).method is Method.INVERSE


@pytest.mark.parametrize("force", [False, True])
def test_a_pristine_file_needs_nothing(force: bool) -> None:
    d = decide_rollback(RollbackFacts(sha256=ORIG, state="pristine", record=None,
                                      plan=NOOP, force=force))
    assert (d.action, d.message, d.method) == (Action.UNCHANGED, "not applied", None)


def test_a_file_that_cannot_be_analysed_is_an_error_before_anything_else() -> None:
    d = decide_rollback(RollbackFacts(sha256=OURS, state="error", record=rec(), backup=GOOD,
                                      plan=FAIL, plan_message="syntax error at line 3"))
    assert (d.action, d.message, d.method) == (Action.ERROR, "syntax error at line 3", None)


def test_forced_rollback_follows_the_inverse_plan() -> None:
    base = RollbackFacts(sha256=OTHER, state="drifted", record=None, force=True)
    refused = decide_rollback(replace(base, plan=REFUSE, plan_message="op 2 drifted"))
    assert (refused.action, refused.message) == (Action.REFUSED, "op 2 drifted")
    assert decide_rollback(replace(base, plan=NOOP)).action is Action.UNCHANGED
    no_bytes = decide_rollback(replace(base, plan=WRITE, inverse=False))
    assert no_bytes.action is Action.UNCHANGED and no_bytes.method is None


def test_backup_intact_and_misplaced() -> None:
    assert backup_intact(rec(), OURS, GOOD)
    assert not backup_intact(rec(), OTHER, GOOD)  # the file changed
    assert not backup_intact(None, OURS, GOOD)
    assert not backup_intact(rec(), OURS, None)
    assert not backup_intact(rec(), OURS, BackupFacts(path=BACKUP, problem="x"))
    assert not backup_intact(rec(backup=None), OURS, GOOD)
    assert backup_misplaced(rec()) is None
    assert backup_misplaced(rec(backup="/etc/passwd")) == (
        f"backup /etc/passwd is not beside {FILE}")
    assert backup_misplaced(rec(backup=FILE)) == f"backup {FILE} is not beside {FILE}"
    assert backup_misplaced(rec(backup="/r/vllm/engine/../engine/x.bak")) is None


# -- recovery ----------------------------------------------------------------------


def test_the_commit_point_is_a_ledger_record_that_recovery_did_not_write() -> None:
    assert committed([rec(txn="t0"), rec(txn="t1")], "t1")
    assert not committed([rec(txn="t0")], "t1")
    assert not committed([rec(txn="t1", action="rollback", method=str(Method.RECOVERY))], "t1")


def test_the_commit_point_stops_reading_at_the_first_hit() -> None:
    def ledgers() -> Iterator[LedgerRecord]:
        yield rec(txn="t1")
        raise AssertionError("read a ledger it did not need")

    assert committed(ledgers(), "t1")


@pytest.mark.parametrize(("current", "step"), [
    (ORIG, RecoverStep.KEEP),  # untouched yet (apply undone to ORIG)
    (OURS, RecoverStep.RESTORE),  # written by the interrupted apply
    (OTHER, RecoverStep.LEFT),  # someone else's
])
def test_recover_step(current: str, step: RecoverStep) -> None:
    assert recover_step(current=current, restore_to=ORIG, before=ORIG, after=OURS) is step


def test_recover_step_of_a_rollback_restores_what_it_read_too() -> None:
    # a rollback read OURS and meant to write ORIG; finishing it writes ORIG
    assert recover_step(current=OURS, restore_to=ORIG, before=OURS, after=ORIG) \
        is RecoverStep.RESTORE
    assert recover_step(current=ORIG, restore_to=ORIG, before=OURS, after=ORIG) \
        is RecoverStep.KEEP

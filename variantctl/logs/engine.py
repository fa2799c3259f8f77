"""The one classification engine behind whole-file and streaming mode.

A driver hands it *candidate* lines (lines holding a catalog keyword, found by
one fast scan) and, while :attr:`Engine.wants_next` is set, the lines right after
them (the second half of a hard-wrapped sentence, the rest of a traceback). The
engine tracks the startup phase, collects facts and signature matches, and turns
them into a :class:`~variantctl.logs.result.Result` on demand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType

from variantctl.logs.facts import KEYWORDS as FACT_KEYWORDS
from variantctl.logs.facts import FactsBuilder
from variantctl.logs.model import Catalog, Phase, Signature
from variantctl.logs.normalize import has_header, normalize, split_header, timestamp_of
from variantctl.logs.result import Evidence, Match, Result
from variantctl.removed_args import removed

#: lines before the current one, newest last: ``history(n) -> [(lineno, raw), …]``
History = Callable[[int], Sequence[tuple[int, str]]]

NOT_STARTED = "not-started"
_TRACEBACK = "traceback (most recent call last)"
_CHAINED = ("the above exception", "during handling of the above exception")
_PROC_KEY = re.compile(r"\([^()]*? pid=(\d+)[^()]*\)|\[rank(\d+)\]:")
_SOFT_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN")
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b")
_FIELD = re.compile(r"\{(\w+)\}")
_OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.S)
#: how many lines after its start an open traceback is followed before giving up on it
_MAX_TRACEBACK = 300
_FRAME_FN = re.compile(r'^File "?[^"]*"?, line \d+, in (?P<fn>[A-Za-z_]\w*)')
#: lines saying the API server is shutting down (an error right before them ended it)
_SHUTDOWN = ("waiting for application shutdown", "application shutdown complete",
             "finished server process")
#: how close before a shutdown line an error must be to count as having ended the server
_SHUTDOWN_WINDOW = 8
_FALLBACK = ("falling back", "fall back")


#: characters from rarest to most common in vLLM logs, weighted towards what long logs
#: are full of (access-log and throughput lines); anything not listed counts as rare
_RARITY = "\\@&$~!+?j;#}{>*<`|z'^bx][wy%q_8976)(5-=\"m4dfk,lu3vc2h/g.:asnr0p1oite "
_RANK = {ch: i for i, ch in enumerate(_RARITY)}


@dataclass(frozen=True)
class Scanner:
    """The keyword scan of a catalog: one fast regex plus what each hit means."""

    pattern: re.Pattern[str]
    #: text matched by the regex (pivot + rest) -> keywords it may belong to
    fragments: dict[str, tuple[str, ...]]
    #: keyword -> signatures that list it
    signatures: dict[str, tuple[Signature, ...]]

    def keywords_in(self, low: str) -> set[str]:
        """Keywords present in a lowercased line (overlapping hits included)."""
        found: set[str] = set()
        search = self.pattern.search
        m = search(low)
        while m is not None:
            for kw in self.fragments.get(m.group(), ()):
                if kw in low:
                    found.add(kw)
            m = search(low, m.start() + 1)
        return found


def _late_words(catalog: Catalog) -> set[str]:
    """Keywords needed only until the server is seen serving: those of the ``serving``
    phases (route list, access lines, throughput lines) that nothing else uses. A running
    server prints such lines by the million; once the last serving phase is reached they
    are no longer scanned for (see :attr:`Engine.scan_pattern`)."""
    serving = {k for p in catalog.phases if p.serving for k in p.keywords}
    other = {k for p in catalog.phases if not p.serving for k in (*p.keywords, *p.end_keywords)}
    other |= {k for sig in catalog.signatures for k in sig.keywords} | set(FACT_KEYWORDS)
    return serving - other


@lru_cache(maxsize=16)
def scanner(catalog: Catalog, *, late: bool = False) -> Scanner:
    """The (cached) scanner of ``catalog``.

    Each keyword is pivoted on its rarest character: the pattern is an alternation
    ``c(?:<trie of what follows c>)`` whose branches all start with a literal, so the
    regex engine skips ahead with a character-set scan to the few positions holding
    a pivot character; there the text after it is checked against a trie (failing on
    the first wrong character) and, at the end of a keyword, a look-behind checks the
    part before the pivot. This is what makes whole-file classification run at tens
    of MB/s in pure Python.
    """
    words = set(catalog.all_keywords()) | set(FACT_KEYWORDS) | {_TRACEBACK, *_SHUTDOWN}
    if late:
        words -= _late_words(catalog)
    # frames of functions that raise only one signature's error (a pasted traceback
    # fragment may start below its "Traceback" line)
    words |= {f", in {fn.lower()}" for sig in catalog.signatures for fn in sig.frames}
    words |= {f", in {fn.lower()}" for ph in catalog.phases for fn in ph.frames}
    groups: dict[str, list[tuple[str, str, bool]]] = {}
    fragments: dict[str, list[str]] = {}
    for w in sorted(words):
        i = min(range(len(w)), key=lambda j: (_RANK.get(w[j], -1), j))
        groups.setdefault(w[i], []).append((w[i + 1 :], w, i > 0))
        fragments.setdefault(w[i:], []).append(w)
    parts = [re.escape(ch) + _after_trie(items) for ch, items in sorted(groups.items())]
    by_kw: dict[str, list[Signature]] = {}
    for sig in catalog.signatures:
        if sig.patterns:
            for kw in sig.keywords:
                by_kw.setdefault(kw, []).append(sig)
    # a hit reports the longest fragment matching there; shorter fragments that are its
    # prefixes matched at the same spot too, so they map to the hit as well
    frag_map = {
        g: tuple(sorted({k for f, ks in fragments.items() if g.startswith(f) for k in ks}))
        for g in fragments
    }
    return Scanner(
        pattern=re.compile("|".join(parts)),
        fragments=frag_map,
        signatures={k: tuple(v) for k, v in by_kw.items()},
    )


class _Trie(dict[str, "_Trie"]):
    """A character trie; ``leaves`` are the keywords ending at this node."""

    def __init__(self) -> None:
        super().__init__()
        self.leaves: list[tuple[str, bool]] = []


def _after_trie(items: Sequence[tuple[str, str, bool]]) -> str:
    root = _Trie()
    for after, word, behind in items:
        node = root
        for ch in after:
            node = node.setdefault(ch, _Trie())
        node.leaves.append((word, behind))

    def build(node: _Trie) -> str:
        # deeper first, so a hit reports the longest keyword's fragment
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items())]
        checks = sorted({f"(?<={re.escape(w)})" for w, behind in node.leaves if behind})
        alts.extend(checks)
        if any(not behind for _, behind in node.leaves):
            alts.append("")  # a keyword starting at its pivot: nothing left to check
        if len(alts) == 1:
            return alts[0]
        return "(?:" + "|".join(alts) + ")"

    return build(root)


def scan_regex(catalog: Catalog) -> re.Pattern[str]:
    """The scan regex of :func:`scanner` (kept for callers that only need the filter)."""
    return scanner(catalog).pattern


@dataclass
class _Pending:
    lineno: int
    raw: str
    norm: str
    sigs: tuple[Signature, ...]


_Deferred = tuple[Signature, "re.Match[str]", str, tuple[Evidence, ...]]


def _filled(m: re.Match[str]) -> int:
    return sum(v is not None for v in m.groupdict().values())


class Engine:
    """Phase tracker, matcher and facts extractor over a sequence of lines."""

    def __init__(self, catalog: Catalog, history: History):
        self.catalog = catalog
        self.history = history
        self.scan = scanner(catalog)
        self._order = {sig.id: i for i, sig in enumerate(catalog.signatures)}
        self.facts = FactsBuilder()
        self.phase_idx = -1
        self.phase_evidence: Evidence | None = None
        #: the line by which the current phase's own progress said it finished (if any)
        self.phase_done: Evidence | None = None
        self.matches: list[Match] = []
        self.hang_evidence: list[tuple[str, Evidence]] = []
        self.ready: Match | None = None
        self.last_line: Evidence | None = None
        self.lines = 0
        self._pending: _Pending | None = None
        self._deferred: list[_Deferred] = []
        self._tbs: dict[str, tuple[Evidence, int]] = {}
        self._tb_start: Evidence | None = None
        self._last_stamped: str | None = None
        self._seen: set[str] = set()
        self._fail_phase: dict[int, int] = {}
        #: failures of earlier starts in the same log (see :meth:`_restart`)
        self._previous: list[Match] = []
        self.restarts = 0
        #: first line of a ``serving`` phase (positive evidence that the API server is up)
        self.serving_evidence: Evidence | None = None
        self._shutdown_lines: list[int] = []
        #: per open traceback: its innermost frame so far (function name, line)
        self._tb_frame: dict[str, tuple[str, Evidence]] = {}
        self._cut_frames: list[tuple[Evidence, tuple[str, Evidence]]] = []
        self._frame_phase = {fn: i for i, ph in enumerate(catalog.phases) for fn in ph.frames}
        self._frame_sig = {fn: sig for sig in catalog.signatures for fn in sig.frames}
        self._frame_names = {fn.lower() for fn in (*self._frame_phase, *self._frame_sig)}
        serving = [i for i, p in enumerate(catalog.phases) if p.serving]
        self._last_serving = serving[-1] if serving else len(catalog.phases)

    # -- state -------------------------------------------------------------------------------

    @property
    def phase(self) -> str:
        if self.phase_idx < 0:
            return NOT_STARTED
        return self.catalog.phases[self.phase_idx].id

    @property
    def scan_pattern(self) -> re.Pattern[str]:
        """The keyword scan for the next lines: without the serving-evidence keywords once
        the last serving phase was reached (they can no longer change the verdict)."""
        if self.phase_idx >= self._last_serving:
            return scanner(self.catalog, late=True).pattern
        return self.scan.pattern

    @property
    def wants_next(self) -> bool:
        """True while the next line must be seen even without a keyword."""
        return self._pending is not None or bool(self._tbs) or bool(self._deferred)

    @property
    def has_deferred(self) -> bool:
        """True while a match waits for a possible continuation line."""
        return bool(self._deferred)

    def note_first_timestamp(self, raw: str) -> bool:
        """Record a line's timestamp as the start of the log; True once one was found."""
        stamp = timestamp_of(raw)
        if stamp is None:
            return False
        self.facts.note_timestamp(*stamp)
        return True

    # -- one line ------------------------------------------------------------------------------

    def process(self, lineno: int, raw: str) -> list[Match]:
        """Look at one line; returns the signature matches it completed."""
        if raw.endswith("\r"):
            raw = raw[:-1]  # CRLF line ends are not part of the line
        norm = normalize(raw)
        low = norm.lower()
        new: list[Match] = []
        deferred, self._deferred = self._deferred, []
        for item in deferred:
            new.append(self._extend(item, lineno, raw, norm))
        pending, self._pending = self._pending, None
        if pending is not None:
            new.extend(self._join_forward(pending, lineno, raw, norm))
        self._follow_traceback(lineno, raw, norm, low)
        if not low.strip():
            return new
        keywords = self.scan.keywords_in(low)
        if not keywords:
            return new
        if ("info" in low or "warn" in low or "error" in low) and has_header(norm):
            self._last_stamped = norm  # parsed only if it turns out to be needed
        if ("shutdown" in low or "finished server process" in low) and any(
                k in low for k in _SHUTDOWN):
            self._shutdown_lines.append(lineno)
        self._track_phase(lineno, raw, norm, low, keywords)
        self.facts.feed(lineno, norm, low)
        waiting: list[Signature] = []
        for sig in self._candidates(keywords):
            if sig.id in self._seen and sig.kind != "hang":
                continue
            m = self._match(sig, norm)
            if m is not None:
                if self._context_ok(sig, norm):
                    new.extend(self._found(sig, m, norm, (Evidence(lineno, raw),)))
                continue
            joined = self._join_backward(sig, lineno, raw, norm)
            if joined is not None:
                new.extend(joined)
            else:
                waiting.append(sig)
        if waiting:
            self._pending = _Pending(lineno, raw, norm, tuple(waiting))
        return new

    def _candidates(self, keywords: set[str]) -> list[Signature]:
        """Signatures listing one of ``keywords``, in catalog order."""
        if len(keywords) == 1:
            return list(self.scan.signatures.get(next(iter(keywords)), ()))
        seen: dict[str, Signature] = {}
        for kw in keywords:
            for sig in self.scan.signatures.get(kw, ()):
                seen.setdefault(sig.id, sig)
        order = self._order
        return sorted(seen.values(), key=lambda s: order[s.id])

    def _match(self, sig: Signature, text: str) -> re.Match[str] | None:
        for rx in sig.patterns:
            m = rx.search(text)
            if m is not None:
                return m
        return None

    def _join_backward(
        self, sig: Signature, lineno: int, raw: str, norm: str
    ) -> list[Match] | None:
        prev = self.history(2)
        if not prev:
            return None
        plineno, praw = prev[-1]
        pnorm = normalize(praw)
        for joined in (pnorm + " " + norm, pnorm + norm):
            m = self._match(sig, joined)
            if m is not None and self._context_ok(sig, joined):
                return self._found(sig, m, joined, (Evidence(plineno, praw), Evidence(lineno, raw)))
        if len(prev) < 2:
            return None
        # a long line (a path) hard-wrapped over three lines, the keyword on the last one
        qlineno, qraw = prev[-2]
        qnorm = normalize(qraw)
        for sep in (" ", ""):
            joined = qnorm + sep + pnorm + sep + norm
            m = self._match(sig, joined)
            if m is not None and self._context_ok(sig, joined):
                return self._found(sig, m, joined, (Evidence(qlineno, qraw),
                                                    Evidence(plineno, praw),
                                                    Evidence(lineno, raw)))
        return None

    def _found(
        self, sig: Signature, m: re.Match[str], text: str, evidence: tuple[Evidence, ...]
    ) -> list[Match]:
        """Record a match, unless an optional capture is still empty: the sentence may
        continue on the next (hard-wrapped) line, so the decision waits one line
        (:meth:`_extend`)."""
        if any(v is None for v in m.groupdict().values()):
            self._deferred.append((sig, m, text, evidence))
            return []
        return [self._record(sig, m, evidence)]

    def _extend(self, item: _Deferred, lineno: int, raw: str, norm: str) -> Match:
        sig, m, text, evidence = item
        best, best_ev = m, evidence
        for joined in (text + " " + norm, text + norm):
            m2 = self._match(sig, joined)
            if m2 is not None and _filled(m2) > _filled(best):
                best, best_ev = m2, (*evidence, Evidence(lineno, raw))
        return self._record(sig, best, best_ev)

    def flush(self) -> list[Match]:
        """Record matches still waiting for a continuation line (the stream ended)."""
        deferred, self._deferred = self._deferred, []
        return [self._record(sig, m, ev) for sig, m, _, ev in deferred]

    def _join_forward(self, pending: _Pending, lineno: int, raw: str, norm: str) -> list[Match]:
        out: list[Match] = []
        for sig in pending.sigs:
            if sig.id in self._seen and sig.kind != "hang":
                continue
            for joined in (pending.norm + " " + norm, pending.norm + norm):
                m = self._match(sig, joined)
                if m is not None and self._context_ok(sig, joined):
                    ev = (Evidence(pending.lineno, pending.raw), Evidence(lineno, raw))
                    out.extend(self._found(sig, m, joined, ev))
                    break
        return out

    def _context_ok(self, sig: Signature, current: str) -> bool:
        ctx = sig.context
        if ctx is None:
            return True
        # the lines before the match (history) and the matched text itself
        window = [normalize(r) for _, r in self.history(ctx.window - 1)]
        window.append(current)
        text = "\n".join(window)
        if any(rx.search(text) is None for rx in ctx.all):
            return False
        return not any(rx.search(text) is not None for rx in ctx.none)

    def _new_match(self, sig: Signature, captures: dict[str, str],
                   evidence: tuple[Evidence, ...], *, generic: bool,
                   level: str | None = None) -> Match:
        """A match of ``sig`` in the current phase, its texts filled with ``captures``."""
        return Match(
            signature=sig.id,
            title=sig.title,
            kind=sig.kind,
            message=fill(sig.message, captures),
            remediation=fill(sig.remediation, captures),
            evidence=evidence,
            captures=MappingProxyType(captures),
            priority=sig.priority,
            generic=generic,
            phase=self.phase,
            level=level,
        )

    def _record(self, sig: Signature, m: re.Match[str], evidence: tuple[Evidence, ...]) -> Match:
        captures = _with_removal({k: v for k, v in m.groupdict().items() if v is not None})
        match = self._new_match(sig, captures, evidence, generic=sig.generic,
                                level=split_header(normalize(evidence[0].text))[0])
        if sig.kind == "hang":
            for ev in evidence:
                self.hang_evidence.append((sig.id, ev))
            return match
        self._seen.add(sig.id)
        if sig.kind == "failed" and match.level in _SOFT_LEVELS and any(
            k in " ".join(e.text for e in evidence).lower() for k in _FALLBACK
        ):
            # only logged, and vLLM says it falls back: the server goes on without it
            match = replace(match, kind="warning")
            self.matches.append(match)
            return match
        if sig.kind == "ok":
            if self.ready is None:
                self.ready = match
                stamp = timestamp_of(normalize(evidence[0].text))
                if stamp is None and self._last_stamped is not None:
                    stamp = timestamp_of(self._last_stamped)
                self.facts.note_ready(stamp)
        else:
            self.matches.append(match)
            self._fail_phase[id(match)] = self.phase_idx
        return match

    def _track_phase(
        self, lineno: int, raw: str, norm: str, low: str, keywords: set[str]
    ) -> None:
        phases = self.catalog.phases
        if self.phase_idx >= 1 and not keywords.isdisjoint(phases[0].keywords) and any(
            rx.search(norm) for rx in phases[0].start
        ):
            # the server started again (a restart appended to the same log): the last
            # start decides, earlier failures stay visible under "also"
            self._restart(norm)
        for i in range(len(phases) - 1, self.phase_idx, -1):
            ph = phases[i]
            if not keywords.isdisjoint(ph.keywords) and any(rx.search(norm) for rx in ph.start):
                self._enter(i, Evidence(lineno, raw))
                self._note_done(phases[i], lineno, raw, norm, keywords)
                return
        if self.phase_idx >= 0:
            self._note_done(phases[self.phase_idx], lineno, raw, norm, keywords)
        if 0 <= self.phase_idx < len(phases) - 1:
            cur = phases[self.phase_idx]
            if not keywords.isdisjoint(cur.end_keywords) and any(
                rx.search(norm) for rx in cur.end
            ):
                self._enter(self.phase_idx + 1, Evidence(lineno, raw))

    def _note_done(self, ph: Phase, lineno: int, raw: str, norm: str,
                   keywords: set[str]) -> None:
        """A line of the current phase: its work finished (a ``done`` line), or a new
        start inside it (the next graph-capture bar) makes it unfinished again."""
        if not ph.done:
            return
        if not keywords.isdisjoint(ph.done_keywords) and any(rx.search(norm) for rx in ph.done):
            self.phase_done = Evidence(lineno, raw)
        elif not keywords.isdisjoint(ph.keywords) and any(rx.search(norm) for rx in ph.start):
            self.phase_done = None

    def _enter(self, index: int, evidence: Evidence) -> None:
        self.phase_done = None
        self.phase_idx = index
        self.phase_evidence = evidence
        if self.catalog.phases[index].serving and self.serving_evidence is None:
            self.serving_evidence = evidence

    def _restart(self, norm: str) -> None:
        self.restarts += 1
        self._previous.extend(m for m in self.matches if m.kind == "failed")
        self.facts = FactsBuilder()
        self.note_first_timestamp(norm)
        self.phase_idx = -1
        self.phase_evidence = None
        self.phase_done = None
        self.matches = []
        self.hang_evidence = []
        self.ready = None
        self._seen = set()
        self._fail_phase = {}
        self._tbs = {}
        self._tb_frame = {}
        self._cut_frames = []
        self.serving_evidence = None
        self._shutdown_lines = []

    def _follow_traceback(self, lineno: int, raw: str, norm: str, low: str) -> None:
        # One traceback per process: several processes' tracebacks interleave line by
        # line, told apart by their ``(Name pid=N)`` / ``[rankN]:`` prefixes.
        if not self._tbs and _TRACEBACK not in low and not self._signature_frame(low):
            return
        for k, (st, _) in list(self._tbs.items()):
            if lineno - st.line > _MAX_TRACEBACK:
                del self._tbs[k]  # never closed (cut, or its process died): stop following
        m = _PROC_KEY.search(raw, 0, 160)
        key = (m.group(1) or m.group(2) or "") if m else ""
        if _TRACEBACK in low:
            self._tbs[key] = (Evidence(lineno, raw), 0)
            self._tb_start = self._tbs[key][0]
            self._tb_frame.pop(key, None)
            return
        state = self._tbs.get(key)
        if state is None:
            if self._signature_frame(low):
                # a traceback fragment pasted without its first line: follow it from here
                self._tbs[key] = (Evidence(lineno, raw), 0)
                self._tb_start = self._tbs[key][0]
                self._note_frame(key, norm.strip(), Evidence(lineno, raw))
            return
        start, length = state
        self._tbs[key] = (start, length + 1)
        # tracebacks printed through the logger carry the header on every line
        msg = split_header(norm)[2] if has_header(norm) else norm
        text = msg.strip()
        if text.startswith("File "):
            self._note_frame(key, text, Evidence(lineno, raw))
            return
        if not text or msg[:1] in (" ", "\t") or text.startswith(("^", "~")):
            return
        if text.lower().startswith(_CHAINED):
            return
        # unindented: the exception line that ends the traceback
        del self._tbs[key]
        frame = self._tb_frame.pop(key, None)
        if _EXCEPTION.match(text):
            self._record_exception(start, lineno, raw, text)
        elif frame is not None and frame[0] in self._frame_sig:
            # no exception line: the traceback was cut (a pasted excerpt) inside a frame
            self._cut_frames.append((start, frame))

    def _signature_frame(self, low: str) -> bool:
        """A frame line of a function that names a signature or a phase (a traceback
        fragment pasted without its ``Traceback`` line is followed from such a frame)."""
        if ", in " not in low or not (self._frame_sig or self._frame_phase):
            return False
        fn = low.rstrip().rsplit(", in ", 1)[-1].strip()
        return fn in self._frame_names

    def _note_frame(self, key: str, text: str, evidence: Evidence) -> None:
        """A traceback frame: the innermost function so far, and the phase its name implies
        (a worker's traceback pasted without the lines that marked the phase)."""
        m = _FRAME_FN.match(text)
        if m is None:
            return
        fn = m.group("fn")
        self._tb_frame[key] = (fn, evidence)
        idx = self._frame_phase.get(fn)
        if idx is not None and idx > self.phase_idx:
            self.phase_idx = idx
            self.phase_evidence = evidence

    def _cut_in_frame(self) -> Match | None:
        """An open (cut) traceback whose innermost frame is a function that raises only one
        signature's error: that failure, with the traceback start and the frame as evidence."""
        cut = [(start, self._tb_frame.get(key)) for key, (start, _) in self._tbs.items()]
        for start, frame in [*cut, *self._cut_frames]:
            sig = self._frame_sig.get(frame[0]) if frame else None
            if frame is not None and sig is not None:
                evidence = (start,) if start == frame[1] else (start, frame[1])
                return self._new_match(sig, {}, evidence, generic=False)
        return None

    def _ends_server(self, m: Match) -> bool:
        """A failure printed after ready that ended the server: a signature that can only
        happen then (the port bind), or a raised/ERROR failure right before a shutdown."""
        sig = self.catalog.get(m.signature)
        if sig is not None and sig.ends_server:
            return True
        if m.generic or m.level in _SOFT_LEVELS:
            return False
        last = m.evidence[-1].line
        return any(0 < n - last <= _SHUTDOWN_WINDOW for n in self._shutdown_lines)

    def _record_exception(self, start: Evidence, lineno: int, raw: str, norm: str) -> None:
        sig = self.catalog.get("startup-error")
        if sig is None:
            return
        for other in self.catalog.signatures:
            # a wrapper's own traceback (``Engine core initialization failed``) is not a cause
            if other.generic and other.patterns and self._match(other, norm):
                return
        match = self._new_match(sig, {"exception": norm[:300]},
                                (start, Evidence(lineno, raw)), generic=True)
        self.matches.append(match)
        self._fail_phase[id(match)] = self.phase_idx

    # -- verdicts ------------------------------------------------------------------------------

    def decisive(self, new: Sequence[Match]) -> Match | None:
        """Among matches just found, the one that decides a stream right away."""
        for m in new:
            if m.kind == "ok" and m is self.ready:
                return m
        # a failure only *logged* at INFO/WARNING level may be recovered from; raised
        # errors (and ERROR records) decide at once
        specific = [m for m in new if m.kind == "failed" and not m.generic
                    and m.level not in _SOFT_LEVELS]
        if specific and self.ready is None:
            return max(specific, key=lambda m: m.priority)
        return None

    def result(self, *, end: str) -> Result:
        """The verdict now. ``end`` is ``eof`` (a file judged after the fact: an excerpt),
        ``running`` (the process is known to still run), ``exited`` (the process is gone)
        or ``stalled`` (no new line for the stall timeout). See docs/classify.md for the
        rules each one applies."""
        self.flush()
        facts = self.facts.snapshot()
        warnings = tuple(m for m in self.matches if m.kind == "warning")
        failures = _dedupe([m for m in self.matches if m.kind == "failed"])
        previous = list(self._previous)
        ready = self.ready
        base = {
            "facts": facts,
            "warnings": warnings,
            "lines": self.lines,
            "catalog_version": self.catalog.version,
        }
        anchor = ready.evidence[0] if ready is not None else self.serving_evidence
        if anchor is not None:
            before = previous + [m for m in failures if m.line < anchor.line]
            after = [m for m in failures if m.line >= anchor.line]
            fatal = [m for m in after if self._ends_server(m)]
            if fatal:
                best = max(fatal, key=lambda m: (m.priority, -m.line))
                also = tuple(m for m in before + after if m is not best)
                return _from_match(best, also, base, note=(
                    f"printed after the server reported ready (line {anchor.line}), and it "
                    "ended the server"))
            if ready is not None:
                return Result(
                    kind="ok",
                    signature=ready.signature,
                    title=ready.title,
                    message=ready.message,
                    remediation=ready.remediation,
                    evidence=ready.evidence,
                    phase="ready",
                    also=tuple(before + after),
                    captures=ready.captures,
                    **base,  # type: ignore[arg-type]
                )
            title = self.catalog.phases[self.phase_idx].title if self.phase_idx >= 0 else ""
            return self._ok_without_ready(
                anchor, tuple(before + after), base,
                f"readiness (\"Application startup complete.\") is not in the log; decided by "
                f"positive evidence that the API server is up: {title} (line {anchor.line})")
        specific = [m for m in failures if not m.generic]
        generic = [
            m for m in failures if m.generic and self._fail_phase.get(id(m), -1) >= self.phase_idx
        ]
        if not specific and self.phase_idx < 0 and end != "exited":
            # only a wrapper, and nothing of the start: an excerpt, not enough to judge
            generic = []
        if not specific:
            cut = self._cut_in_frame()
            if cut is not None:
                fn = self._tb_frame_name(cut)
                return _from_match(cut, tuple(previous + failures), base, note=(
                    f"the traceback is cut off inside {fn}(), which raises only this error"))
        if specific or generic:
            pool = specific or generic
            best = max(pool, key=lambda m: (m.priority, -m.line))
            also = tuple(m for m in previous + failures if m is not best)
            return _from_match(best, also, base)
        if self._tbs or end == "exited" or (self.phase_idx < 0 and end != "stalled"):
            return self._unknown(end, base)
        ph = self.catalog.phases[self.phase_idx] if self.phase_idx >= 0 else None
        if end == "eof" and ph is not None and self._engine_finished():
            evidence = self.phase_evidence or self.last_line
            assert evidence is not None
            return self._ok_without_ready(
                evidence, tuple(previous), base,
                "weak evidence: the engine finished its start-up "
                f"(line {evidence.line}) and nothing failed after it; the API server's "
                "readiness is not in the excerpt")
        hang = self._hang(base)
        if end == "eof":
            marked = any(sid == hang.signature for sid, _ in self.hang_evidence)
            why = self._finished_why()
            if why and not marked:
                return self._incomplete(hang, base, why)
            return replace(hang, note=(
                f"possible hang: the log stops inside {hang.phase}; a log judged after the fact "
                "cannot tell a hang from an excerpt cut there"))
        return hang

    def _finished_why(self) -> str:
        """Why an excerpt that ends in a phase did not hang there: the phase's own progress
        says it finished, or the last line is a fallback warning every healthy start prints
        (a hung load's last words are the phase's own start, not such a warning)."""
        if self.phase_done is not None:
            return f"the phase's own progress says it finished (line {self.phase_done.line})"
        last = self.last_line
        if last is not None:
            norm = normalize(last.text)
            low = norm.lower()
            if split_header(norm)[0] in _SOFT_LEVELS and any(k in low for k in _FALLBACK):
                return (f"its last line (line {last.line}) is a fallback warning that "
                        "healthy starts print")
        return ""

    def _incomplete(self, hang: Result, base: dict[str, object], why: str) -> Result:
        """An excerpt whose only evidence is that it ends: not a hang (a pasted log stops
        anywhere, often after a phase that finished), but ``unknown`` with the phase it
        ended in. A live launch (``running``/``stalled``) keeps its hang verdicts."""
        title = self.catalog.phases[self.phase_idx].title if self.phase_idx >= 0 else ""
        return Result(
            kind="unknown",
            signature=None,
            title="Incomplete log",
            message=f"incomplete: ended in phase {hang.phase}",
            remediation="The excerpt stops before the server was ready and shows no failure: "
            "look at the rest of the log (or run `variantctl classify --running` on the log "
            "of a server that still runs, to judge it as a hang).",
            evidence=hang.evidence,
            phase=hang.phase,
            note=(f"incomplete: the log ends in {title or hang.phase} with no error, and "
                  f"{why}: not a hang"),
            **base,  # type: ignore[arg-type]
        )

    def _engine_finished(self) -> bool:
        phases = self.catalog.phases
        return any(p.engine_ready for p in phases[: self.phase_idx + 1])

    def _tb_frame_name(self, match: Match) -> str:
        frames = [*self._tb_frame.values(), *(f for _, f in self._cut_frames)]
        for fn, ev in frames:
            if ev in match.evidence:
                return fn
        return "?"

    def _ok_without_ready(self, evidence: Evidence, also: tuple[Match, ...],
                          base: dict[str, object], note: str) -> Result:
        sig = self.catalog.get("startup-ok")
        return Result(
            kind="ok",
            signature="startup-ok",
            title=sig.title if sig else "Server started",
            message=sig.message if sig else "",
            remediation="",
            evidence=(evidence,),
            phase=self.phase,
            also=also,
            note=note,
            **base,  # type: ignore[arg-type]
        )

    def _unknown(self, end: str, base: dict[str, object]) -> Result:
        if self._tbs:
            why = "the log ends inside a traceback: its cause was cut off"
        elif end == "exited":
            why = "the process exited without a recognised cause"
        else:
            why = "no startup phase and no known signature in the log"
        evidence = tuple(e for e in (self._tb_start, self.last_line) if e is not None)
        return Result(
            kind="unknown",
            signature=None,
            title="Not enough evidence for a verdict",
            message=why,
            remediation="Look at the full server log (including earlier lines and every "
            "process' output); add a signature for new failure messages.",
            evidence=evidence,
            phase=self.phase,
            **base,  # type: ignore[arg-type]
        )

    def _hang(self, base: dict[str, object]) -> Result:
        if self.phase_idx >= 0:
            ph = self.catalog.phases[self.phase_idx]
            phase_id, title, hang = ph.id, ph.title, ph.hang or ""
        else:
            phase_id, title, hang = NOT_STARTED, "process start", ""
        sig = self.catalog.get(hang) or self.catalog.get("startup-stalled")
        captures = {"phase": title}
        evidence: list[Evidence] = []
        if self.phase_evidence is not None:
            evidence.append(self.phase_evidence)
        if sig is not None:
            evidence.extend(e for sid, e in self.hang_evidence if sid == sig.id)
        if self.last_line is not None and all(e.line != self.last_line.line for e in evidence):
            evidence.append(self.last_line)
        return Result(
            kind="hang",
            signature=sig.id if sig else "startup-stalled",
            title=sig.title if sig else "Startup stopped making progress",
            message=fill(sig.message, captures) if sig else f"no progress in phase {title}",
            remediation=fill(sig.remediation, captures) if sig else "",
            evidence=tuple(sorted(evidence, key=lambda e: e.line)),
            phase=phase_id,
            captures=MappingProxyType(captures),
            **base,  # type: ignore[arg-type]
        )


#: captures that name an engine argument or CLI flag (the first one, for argparse's list)
_ARG_CAPTURES = ("arg", "flag", "args")
_FIRST_ARG = re.compile(r"--?[A-Za-z][\w\-]*|[A-Za-z_]\w*")


def _with_removal(captures: dict[str, str]) -> dict[str, str]:
    """Add ``removed_in`` / ``last_with`` (the mined release table) when a capture names an
    engine argument that a vLLM release removed: a wrapper passing it through the Python
    API and a command line passing its flag get the same "removed in" finding."""
    for name in _ARG_CAPTURES:
        value = captures.get(name)
        first = _FIRST_ARG.search(value) if value else None
        span = removed(first.group()) if first else None
        if span is not None:
            return {**captures, "last_with": span[0], "removed_in": span[1]}
    return captures


def _dedupe(failures: list[Match]) -> list[Match]:
    """Drop the unrecognised-exception record of a line another signature recognised."""
    known = {e.line for m in failures if m.signature != "startup-error" for e in m.evidence}
    return [m for m in failures
            if not (m.signature == "startup-error" and m.evidence[-1].line in known)]


def _from_match(best: Match, also: tuple[Match, ...], base: dict[str, object],
                note: str = "") -> Result:
    return Result(
        note=note,
        kind=best.kind,
        signature=best.signature,
        title=best.title,
        message=best.message,
        remediation=best.remediation,
        evidence=best.evidence,
        phase=best.phase,
        also=also,
        captures=best.captures,
        **base,  # type: ignore[arg-type]
    )


def fill(template: str, captures: dict[str, str]) -> str:
    """``{name}`` replaced by its capture. ``[[ … ]]`` is an optional part, dropped when a
    name inside it was not captured (patterns of one signature capture different names);
    a name outside an optional part with no capture is shown as ``?``."""

    def optional(m: re.Match[str]) -> str:
        names = _FIELD.findall(m.group(1))
        return m.group(1) if all(n in captures for n in names) else ""

    text = _OPTIONAL.sub(optional, template)
    return _FIELD.sub(lambda m: captures.get(m.group(1), "?"), text)

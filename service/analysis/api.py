"""One call for the service and the agent: raw files in, JSON-ready verdicts, views, quality and profiles out.

    result = run(result_set_or_runs, alpha=0.05, test="paired_t", fdr=None, gain=0.10,
                 msg_budget=None, int_budget=None, cautious=False, campaign=None)
    result["counts"], result["verdicts"], result["quality"], result["profiles"] (each with "text" = .prf)
    result["heatmaps"] (one per config), result["configs"], result["control"] (the control arm's figures,
    verdicts.ControlSummary), result["defects"] (failed results checks), result["fdr"],
    result["refused"] (violated pattern verdicts not made redirections, each with its rule and why)
    result["spans"] (profiles for the counts between two measured ones whose profiles agree: candidates that
    only a validation at the unmeasured count they name may confirm, spans.py), result["spans_refused"]

fdr=None (the default) means: BH across the analysis when it is a campaign's (campaign named), else off.
confirmations=K: a redirection must have been found by K campaigns, this one and confirmed_before's count of
earlier ones ((collective key, nprocs, msize, mock-up) -> campaigns; the service counts them from its database).

    parse_files([(name, text), ...]) -> ResultSet   # raises reader.ResultsFormatError (name:line: message)
"""
from __future__ import annotations

from .comparers import heatmap
from .guidelines import analyze
from .profiles import generate_profiles
from .spans import measured_counts, span_candidates
from .quality import quality
from pgmpi_formats.results import ResultSet, RunResult, parse_text
from .stats import DEFAULT_TEST


def parse_files(files) -> ResultSet:
    return ResultSet.from_runs([parse_text(text, name) for name, text in files])


def run(data, alpha: float = 0.05, test: str = DEFAULT_TEST, fdr: bool | None = None, gain: float = 0.10,
        msg_budget: int | None = None, int_budget: int | None = None, cautious: bool = False,
        campaign: str | None = None, split_tolerance: float = 0.05, confirmations: int = 1,
        confirmed_before: dict | None = None, memory=None) -> dict:
    """memory: the profiles' memory.MemoryModel (default: MemoryModel.auto(), the library's checker)."""
    rs = data if isinstance(data, ResultSet) else ResultSet.from_runs(list(data))
    if fdr is None:
        fdr = bool(campaign)
    a = analyze(rs, alpha=alpha, test=test, fdr=fdr, split_tolerance=split_tolerance)
    refused: list[dict] = []
    profs = generate_profiles(a, gain=gain, msg_budget=msg_budget, int_budget=int_budget, cautious=cautious,
                              campaign=campaign, confirmations=confirmations, confirmed_before=confirmed_before,
                              refused=refused, memory=memory)
    out = a.to_dict()
    out["quality"] = quality(a)
    out["profiles"] = [p.to_dict() for p in profs]
    out["heatmaps"] = [heatmap(a, c) for c in range(len(a.configs))]
    out["gain"] = gain
    out["fdr"] = fdr
    out["confirmations"] = confirmations
    out["refused"] = refused
    # counts between measured ones: candidates only, each to be confirmed by a validation at an unmeasured
    # count before anything publishes it (spans.py)
    spans, no_span = span_candidates(profs, measured_counts(a))
    out["spans"] = [s.to_dict() for s in spans]
    out["spans_refused"] = no_span
    return out


__all__ = ["parse_files", "run", "RunResult", "ResultSet"]

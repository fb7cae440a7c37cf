"""A saved session as an inspect eval log (``swarm-tui export FILE --format inspect -o OUT.eval``): one sample, the
problem as its input and the run's answer as its output, the swarm's story (core.interop.story) as ``info``
events of its transcript and in its metadata, the tokens as its model usage; ``inspect view`` opens it and
``inspect_ai.log.read_eval_log`` reads it."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.event import InfoEvent
from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, EvalStats, write_eval_log
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage

from core.interop.story import story_item, story_summary
from core.llm.prices import cost_text
from core.sessions.model import Session

LOG_SUFFIXES = (".eval", ".json")


def session_log(session: Session) -> EvalLog:
    """The eval log of one recorded run."""
    run, outcome = session.metadata, session.outcome
    items = [item for item in map(story_item, session.replay_events()) if item is not None]
    answer = outcome.final_answer if outcome is not None else ""
    model = run.model or "unknown"
    usage = ModelUsage(input_tokens=outcome.prompt_tokens, output_tokens=outcome.completion_tokens,
                       total_tokens=outcome.prompt_tokens + outcome.completion_tokens,
                       input_tokens_cache_read=outcome.cached_tokens) if outcome is not None else None
    sample = EvalSample(
        id=run.run_id, epoch=1, input=run.problem, target="",
        messages=[ChatMessageUser(content=run.problem), ChatMessageAssistant(content=answer, model=model)],
        output=ModelOutput.from_content(model=model, content=answer),
        metadata={"swarm": {
            "method": run.strategy, "domain": str(run.domain), "params": run.params, "demo": run.demo,
            "reason": str(outcome.reason) if outcome is not None else "did not finish",
            "rounds": outcome.rounds if outcome is not None else session.completed_rounds,
            "cost": (cost_text(outcome.cost_usd, outcome.cost_unknown, outcome.cost_local)
                     if outcome is not None else ""),
            **story_summary(items)}},
        events=[InfoEvent(source=source, data=data) for source, data in items],
        model_usage={model: usage} if usage is not None else {},
    )
    spec = EvalSpec(
        created=session.created, task=f"swarm-tui/{run.strategy}", dataset=EvalDataset(name="swarm-tui session",
                                                                                      samples=1),
        model=model, config=EvalConfig(), solver="swarm_tui/swarm",
        solver_args={"method": run.strategy, **run.method_options}, metadata={"swarm_tui_session": run.run_id},
    )
    return EvalLog(status="success" if outcome is not None else "started", eval=spec, samples=[sample],
                   stats=EvalStats(started_at=session.created, completed_at=session.finished or ""))


def write_session_log(session: Session, path: Path) -> Path:
    """Write the session's eval log to ``path`` (.eval, inspect's own format, or .json)."""
    if path.suffix not in LOG_SUFFIXES:
        raise ValueError(f"an eval log is written as {' or '.join(LOG_SUFFIXES)}, not {path.name!r}")
    write_eval_log(session_log(session), str(path), format="eval" if path.suffix == ".eval" else "json")
    return path

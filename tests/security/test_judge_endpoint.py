"""Issue 14 item 4, the judge's side: its one HTTP call reads no local file and follows no
redirect, so its key never reaches a host (or scheme) other than the judge URL's. Real loopback
servers; the judge is the scoring core's own ``run_judge``."""
from __future__ import annotations

from pathlib import Path

from scoring.core.judge import JudgeConfig, run_judge
from scoring.runs.options import RunOptions
from tests.security.hostile import RecordingHTTP, http_answer

PREDICTION = [{"actions": [{"side": "agent", "action_type": "rebook"}]}]


def _judge(url: str) -> JudgeConfig:
    """The run options' judge defaults at ``url``, with a key."""
    return JudgeConfig.from_flags(vars(RunOptions(judge_url=url, judge_model="j")), api_key="sk-judge")


VERDICT = b'{"choices": [{"message": {"content": "{\\"score\\": 1, \\"reason\\": \\"from elsewhere\\"}"}}]}'


def test_the_judge_does_not_follow_a_redirect_with_its_key() -> None:
    elsewhere = RecordingHTTP(lambda seen: http_answer(200, VERDICT))
    redirecting = RecordingHTTP(lambda seen: http_answer(302, extra=f"Location: {elsewhere.base_url}/chat/completions\r\n"))
    try:
        result = run_judge(_judge(f"{redirecting.base_url}/chat/completions"), prediction=PREDICTION)
    finally:
        elsewhere.stop()
        redirecting.stop()
    assert redirecting.saw("Bearer sk-judge")
    assert elsewhere.connections == 0
    assert result["score"] == 0.0 and result["reason"].startswith("Error: HTTP 302 from judge endpoint")


def test_the_judge_reads_no_local_file(tmp_path: Path) -> None:
    answer = tmp_path / "completions"
    answer.write_bytes(VERDICT)  # what a file:// "judge" would answer with
    result = run_judge(_judge(f"file://{answer}"), prediction=PREDICTION)
    assert result["score"] == 0.0 and "unknown url type: file" in result["reason"]

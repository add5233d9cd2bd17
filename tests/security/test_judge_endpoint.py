"""Issue 14 item 4, the judge's side: its one HTTP call reads no local file and follows no
redirect, so its key never reaches a host (or scheme) other than the judge URL's. Real loopback
servers; the judge is the scoring core's own ``run_judge``."""
from __future__ import annotations

from pathlib import Path

from scoring.core.judge import JudgeConfig, run_judge
from tests.security.hostile import RecordingHTTP, http_answer

PREDICTION = [{"actions": [{"side": "agent", "action_type": "rebook"}]}]
VERDICT = b'{"choices": [{"message": {"content": "{\\"score\\": 1, \\"reason\\": \\"from elsewhere\\"}"}}]}'


def test_the_judge_does_not_follow_a_redirect_with_its_key() -> None:
    elsewhere = RecordingHTTP(lambda seen: http_answer(200, VERDICT))
    redirecting = RecordingHTTP(lambda seen: http_answer(307, extra=f"Location: {elsewhere.base_url}/chat/completions\r\n"))
    try:
        result = run_judge(JudgeConfig(url=f"{redirecting.base_url}/chat/completions", model="j", api_key="sk-judge"),
                           prediction=PREDICTION)
    finally:
        elsewhere.stop()
        redirecting.stop()
    assert redirecting.saw("Bearer sk-judge")
    assert elsewhere.connections == 0
    assert result["score"] == 0.0 and result["reason"].startswith("Error: HTTP 307 from judge endpoint")


def test_the_judge_reads_no_local_file(tmp_path: Path) -> None:
    answer = tmp_path / "completions"
    answer.write_bytes(VERDICT)  # what a file:// "judge" would answer with
    result = run_judge(JudgeConfig(url=f"file://{answer}", model="j", api_key="sk-judge"), prediction=PREDICTION)
    assert result["score"] == 0.0 and "unknown url type: file" in result["reason"]

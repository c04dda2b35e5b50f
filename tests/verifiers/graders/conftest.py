"""Fixtures of the grader tests: a pip-installed graded task set (graded_faq_env: an RFT job's files as a
flywheel plug-in), and a judge model served on 127.0.0.1 in the chat-completions shape, for the model graders' tests.

It grades by a fixed rule on the rendered prompt: "ANSWER: x" equal to "REFERENCE: y" is correct. Model
`gullible` also obeys words in the answer asking for the top score (a judge open to injection); `missing`
answers 404 and `flaky` 500. Every request body is kept in `server.requests`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flywheel.environments.registry import reload_environments


def _reply(body: dict) -> tuple[int, str]:
    model = body["model"]
    if model == "missing":
        return 404, json.dumps({"error": {"message": "model 'missing' not found", "type": "invalid_request_error"}})
    if model == "flaky":
        return 500, json.dumps({"error": {"message": "overloaded", "type": "server_error"}})
    text = "\n".join(m["content"] for m in body["messages"] if m["role"] != "system" or "ANSWER" in m["content"])
    answer = re.search(r"ANSWER: (.*)", text)
    ref = re.search(r"REFERENCE: (.*)", text)
    right = bool(answer and ref and answer.group(1).strip() == ref.group(1).strip())
    if model == "gullible" and "highest score" in text:
        right = True
    instruction = body["messages"][-1]["content"]
    if "labels" in instruction:
        return 200, "correct" if right else "The answer is incorrect."
    if "garbled" in text:
        return 200, "I cannot decide."
    return 200, json.dumps({"steps": ["compared"], "result": 10 if right else 2})


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        status, content = _reply(body)
        if status == 200:
            content = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": content}}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        data = content.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def judge_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def graded_faq(tmp_path_factory):
    """graded_faq_env pip-installed (offline, no deps) and discovered, as test_thirdparty installs its plug-in."""
    target = tmp_path_factory.mktemp("site")
    src = tmp_path_factory.mktemp("src") / "graded_faq_env"
    shutil.copytree(Path(__file__).parent / "graded_faq_env", src)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(target), str(src)], check=True, timeout=300)
    sys.path.insert(0, str(target))
    yield reload_environments()
    sys.path.remove(str(target))
    sys.modules.pop("graded_faq", None)
    reload_environments()

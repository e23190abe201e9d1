#!/usr/bin/env python3
"""A recording server for agent CLIs (Claude Code, Codex CLI, OpenCode).

Stdlib only. Listens on 127.0.0.1, appends one JSON line per request (method,
path, query, headers, body, how it was classified, what was answered) to a log
file, and answers plausibly in three wire formats:

* Anthropic Messages  (POST .../messages)          -> SSE message_start ... message_stop
* OpenAI Responses    (POST .../responses)         -> SSE response.created ... response.completed
* OpenAI Chat         (POST .../chat/completions)  -> SSE chat.completion.chunk ... [DONE]

Scripted two-turn loop for the *main* agent request (one that carries tools):
  turn 1 (no tool result in the request yet) -> a native tool call that writes hello.txt = "hi"
  turn 2 (the request carries a tool result) -> final text "done"
Requests without tools (titles, quota probes, summaries ...) get a short text.
Side paths: HEAD/GET / -> 200, .../count_tokens -> {"input_tokens": n}, .../models -> one model.

Usage: python3 scripts/agent_recording_server.py --port 8765 --log /tmp/rec.jsonl [--tool-choice write|shell]
"""
from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
ARGS = None
COUNTER = {"n": 0}
CMD = "printf hi > hello.txt"


def log(rec: dict) -> None:
    with LOCK:
        COUNTER["n"] += 1
        rec["seq"] = COUNTER["n"]
        with open(ARGS.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- turn logic
def tool_names_anthropic(body):
    return [t.get("name") for t in body.get("tools") or []]


def tool_names_openai(body):
    out = []
    for t in body.get("tools") or []:
        if t.get("type") == "function":
            fn = t.get("function") or t  # chat nests under "function", responses is flat
            out.append(fn.get("name"))
        else:
            out.append(t.get("name") or t.get("type"))
    return out


def anthropic_has_tool_result(body):
    n = 0
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, list):
            n += sum(1 for b in c if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def responses_tool_outputs(body):
    inp = body.get("input")
    if not isinstance(inp, list):
        return 0
    return sum(1 for it in inp if isinstance(it, dict) and it.get("type", "").endswith("call_output"))


def chat_tool_outputs(body):
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")


def has_code_mode_exec(body):
    def walk(tools):
        for t in tools or []:
            if t.get("type") == "custom" and t.get("name") == "exec":
                return True
            if walk(t.get("tools")):
                return True
        return False
    inp = body.get("input")
    if not isinstance(inp, list):
        return False
    return any(isinstance(it, dict) and it.get("type") == "additional_tools" and walk(it.get("tools")) for it in inp)


def find_tool(body, names, flavour):
    """Return (name, params schema) of the first tool in `names` that the request offers."""
    for want in names:
        for t in body.get("tools") or []:
            if flavour == "anthropic":
                if t.get("name") == want:
                    return want, t.get("input_schema") or {}
            else:
                fn = t.get("function") or t
                if fn.get("name") == want:
                    return want, fn.get("parameters") or {}
    return None, None


def shell_args(name, schema):
    props = (schema or {}).get("properties") or {}
    args = {}
    if "cmd" in props:
        args["cmd"] = CMD
    elif "command" in props:
        typ = props["command"].get("type")
        args["command"] = ["bash", "-lc", CMD] if typ == "array" else CMD
    else:
        args["command"] = CMD
    if "description" in props:
        args["description"] = "Create hello.txt containing hi"
    return args


# ---------------------------------------------------------------- SSE helpers
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):  # quiet
        pass

    def _read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _record(self, body_bytes, kind, answer):
        u = urlsplit(self.path)
        enc = (self.headers.get("Content-Encoding") or "").lower()
        raw = body_bytes
        if enc == "zstd":
            try:
                import zstandard  # type: ignore
                raw = zstandard.ZstdDecompressor().decompress(body_bytes, max_output_size=1 << 28)
            except Exception:  # noqa: BLE001
                pass
        try:
            body = json.loads(raw) if raw else None
        except Exception:  # noqa: BLE001
            body = {"_raw": raw[:4000].decode("utf-8", "replace")}
        log({
            "ts": time.time(),
            "method": self.command,
            "target": self.path,
            "path": u.path,
            "query": parse_qs(u.query),
            "headers": dict(self.headers.items()),
            "body_bytes": len(body_bytes),
            "body": body,
            "kind": kind,
            "answer": answer,
        })

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _ev(self, event, data):
        chunk = ""
        if event:
            chunk += f"event: {event}\n"
        chunk += "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    # ------------------------------------------------------------ verbs
    def do_HEAD(self):
        self._record(b"", "probe", "200")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_CONNECT(self):
        # Only reached when an agent is run with HTTPS_PROXY pointing here: records which outside
        # host it tried to reach, then refuses the tunnel.
        self._record(b"", "proxy-connect", "403")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_GET(self):
        u = urlsplit(self.path)
        self._record(b"", "get", "")
        if u.path.endswith("/models"):
            self._json(200, {"object": "list", "data": [
                {"id": ARGS.model, "object": "model", "created": 0, "owned_by": "rec",
                 "type": "model", "display_name": ARGS.model, "created_at": "2025-01-01T00:00:00Z"}],
                "has_more": False, "first_id": ARGS.model, "last_id": ARGS.model})
        elif u.path in ("/", ""):
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": "not found"}})

    def do_POST(self):
        raw = self._read_body()
        u = urlsplit(self.path)
        try:
            body = json.loads(raw) if raw else {}
        except Exception:  # noqa: BLE001
            body = {}
        p = u.path
        if p.endswith("/count_tokens"):
            self._record(raw, "count_tokens", "input_tokens")
            return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        if p.endswith("/messages"):
            return self.anthropic(raw, body)
        if p.endswith("/responses"):
            return self.openai_responses(raw, body)
        if p.endswith("/chat/completions"):
            return self.chat(raw, body)
        self._record(raw, "unknown", "404")
        self._json(404, {"error": {"type": "not_found_error", "message": "not found"}})

    # ------------------------------------------------------------ Anthropic
    def anthropic(self, raw, body):
        if ARGS.reject_system_role and any(m.get("role") == "system" for m in body.get("messages") or []):
            msg = ('messages: Unexpected role "system". The input message role must be one of '
                   '"user" or "assistant"')
            self._record(raw, "rejected-system-role", "400")
            return self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": msg}})
        prefer = ["Write", "Bash"] if ARGS.tool_choice == "write" else ["Bash", "Write"]
        name, schema = find_tool(body, prefer, "anthropic")
        results = anthropic_has_tool_result(body)
        if name and results == 0:
            kind, text = "main-turn1", None
            args = shell_args(name, schema)
            if name == "Write":
                args = {"file_path": str(ARGS.workdir.rstrip("/") + "/hello.txt"), "content": "hi"}
        elif name:
            kind, text = f"main-turn{results + 1}", "done"
        else:
            kind, text = "side-no-tools", ARGS.side_text
        self._record(raw, kind, text if text is not None else {"tool": name, "args": args})
        model = body.get("model", ARGS.model)
        mid = "msg_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 10, "output_tokens": 0, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if not body.get("stream"):
            content = ([{"type": "text", "text": text}] if text is not None else
                       [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": args}])
            return self._json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                    "content": content,
                                    "stop_reason": "end_turn" if text is not None else "tool_use",
                                    "stop_sequence": None, "usage": {**usage, "output_tokens": 3}})
        self._sse_start()
        self._ev("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}})
        if text is not None:
            self._ev("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}})
            self._ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": text}})
            stop = "end_turn"
        else:
            self._ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": {}}})
            self._ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}})
            stop = "tool_use"
        self._ev("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": 5}})
        self._ev("message_stop", {"type": "message_stop"})

    # ------------------------------------------------------------ Responses
    def openai_responses(self, raw, body):
        prefer = ["exec_command", "shell_command", "shell"]
        name, schema = find_tool(body, prefer, "openai")
        custom = None
        if not name and has_code_mode_exec(body):
            # Codex "code mode" (known OpenAI models): tools travel in an input item of type
            # "additional_tools"; the only shell route is the freeform custom tool `exec` (JavaScript).
            name, custom = "exec", 'await tools.exec_command({cmd: "%s"});\ntext("ok");' % CMD
        outs = responses_tool_outputs(body)
        if name and outs == 0:
            kind, text, args = "main-turn1", None, (custom if custom else shell_args(name, schema))
        elif name:
            kind, text, args = f"main-turn{outs + 1}", "done", None
        else:
            kind, text, args = "side-no-tools", ARGS.side_text, None
        self._record(raw, kind, text if text is not None else {"tool": name, "args": args})
        rid = "resp_" + uuid.uuid4().hex[:24]
        model = body.get("model", ARGS.model)
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        self._sse_start()
        seq = iter(range(1000))
        self._ev("response.created", {"type": "response.created", "sequence_number": next(seq), "response": base})
        self._ev("response.in_progress", {"type": "response.in_progress", "sequence_number": next(seq), "response": base})
        if text is not None:
            item_id = "msg_" + uuid.uuid4().hex[:24]
            item0 = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
            self._ev("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                     "output_index": 0, "item": item0})
            part = {"type": "output_text", "text": "", "annotations": []}
            self._ev("response.content_part.added", {"type": "response.content_part.added", "sequence_number": next(seq),
                                                      "item_id": item_id, "output_index": 0, "content_index": 0, "part": part})
            self._ev("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": next(seq),
                                                     "item_id": item_id, "output_index": 0, "content_index": 0, "delta": text})
            self._ev("response.output_text.done", {"type": "response.output_text.done", "sequence_number": next(seq),
                                                    "item_id": item_id, "output_index": 0, "content_index": 0, "text": text})
            partd = {"type": "output_text", "text": text, "annotations": []}
            self._ev("response.content_part.done", {"type": "response.content_part.done", "sequence_number": next(seq),
                                                     "item_id": item_id, "output_index": 0, "content_index": 0, "part": partd})
            item = {**item0, "status": "completed", "content": [partd]}
        elif custom is not None:
            item_id = "ctc_" + uuid.uuid4().hex[:24]
            call_id = "call_" + uuid.uuid4().hex[:24]
            item0 = {"id": item_id, "type": "custom_tool_call", "status": "in_progress", "name": name,
                     "call_id": call_id, "input": ""}
            self._ev("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                     "output_index": 0, "item": item0})
            self._ev("response.custom_tool_call_input.delta", {"type": "response.custom_tool_call_input.delta",
                                                                "sequence_number": next(seq), "item_id": item_id,
                                                                "output_index": 0, "delta": custom})
            self._ev("response.custom_tool_call_input.done", {"type": "response.custom_tool_call_input.done",
                                                               "sequence_number": next(seq), "item_id": item_id,
                                                               "output_index": 0, "input": custom})
            item = {**item0, "status": "completed", "input": custom}
        else:
            item_id = "fc_" + uuid.uuid4().hex[:24]
            call_id = "call_" + uuid.uuid4().hex[:24]
            a = json.dumps(args)
            item0 = {"id": item_id, "type": "function_call", "status": "in_progress", "name": name,
                     "call_id": call_id, "arguments": ""}
            self._ev("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                     "output_index": 0, "item": item0})
            self._ev("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                                 "sequence_number": next(seq), "item_id": item_id,
                                                                 "output_index": 0, "delta": a})
            self._ev("response.function_call_arguments.done", {"type": "response.function_call_arguments.done",
                                                                "sequence_number": next(seq), "item_id": item_id,
                                                                "output_index": 0, "arguments": a})
            item = {**item0, "status": "completed", "arguments": a}
        self._ev("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq),
                                                "output_index": 0, "item": item})
        done = {**base, "status": "completed", "output": [item],
                "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}
        self._ev("response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": done})

    # ------------------------------------------------------------ Chat completions
    def chat(self, raw, body):
        prefer = ["write", "bash"] if ARGS.tool_choice == "write" else ["bash", "write"]
        name, schema = find_tool(body, prefer, "openai")
        outs = chat_tool_outputs(body)
        if name and outs == 0:
            kind, text, args = "main-turn1", None, shell_args(name, schema)
            if name == "write":
                args = {"filePath": ARGS.workdir.rstrip("/") + "/hello.txt", "content": "hi"}
        elif name:
            kind, text, args = f"main-turn{outs + 1}", "done", None
        else:
            kind, text, args = "side-no-tools", ARGS.side_text, None
        self._record(raw, kind, text if text is not None else {"tool": name, "args": args})
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        model = body.get("model", ARGS.model)
        now = int(time.time())

        def chunk(delta, finish=None, usage=None):
            c = {"id": cid, "object": "chat.completion.chunk", "created": now, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if usage is not None:
                c["usage"] = usage
            return c

        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text}
            if text is None:
                msg["tool_calls"] = [{"id": "call_" + uuid.uuid4().hex[:20], "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(args)}}]
            return self._json(200, {"id": cid, "object": "chat.completion", "created": now, "model": model,
                                    "choices": [{"index": 0, "message": msg,
                                                 "finish_reason": "stop" if text is not None else "tool_calls"}],
                                    "usage": usage})
        self._sse_start()
        self._ev(None, chunk({"role": "assistant", "content": ""}))
        if text is not None:
            self._ev(None, chunk({"content": text}))
            self._ev(None, chunk({}, "stop"))
        else:
            self._ev(None, chunk({"tool_calls": [{"index": 0, "id": "call_" + uuid.uuid4().hex[:20], "type": "function",
                                                  "function": {"name": name, "arguments": ""}}]}))
            self._ev(None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]}))
            self._ev(None, chunk({}, "tool_calls"))
        if (body.get("stream_options") or {}).get("include_usage"):
            c = chunk({}, None, usage)
            c["choices"] = []
            self._ev(None, c)
        self._ev(None, "[DONE]")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--log", required=True)
    ap.add_argument("--model", default="rec-model")
    ap.add_argument("--tool-choice", choices=["shell", "write"], default="shell")
    ap.add_argument("--workdir", default=".", help="absolute dir for Write tool file paths")
    ap.add_argument("--side-text", default="Create hello file")
    ap.add_argument("--reject-system-role", action="store_true",
                    help="answer 400 to a Messages request with a role:system message (tests Claude Code's fallback)")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    print(f"listening on 127.0.0.1:{ARGS.port}, logging to {ARGS.log}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

"""Programs the tests run inside a run, as its agent: Python source, standard library
only (task images have python3 and nothing else of ours), printing one JSON line."""

from __future__ import annotations

# Every route of the daemon's agent API, the admin routes, paths that would lead out of
# the API, and MCP (initialize, tools/list, every tool, an unknown tool).
DAEMON_API = r"""
import json, urllib.request, urllib.error
BASE = "http://127.0.0.1:4263"
answers = {}
def call(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            text = response.read().decode("utf-8", "replace")
            return response.status, dict(response.headers), text
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode("utf-8", "replace")
for method, path in [("GET", "/version"), ("GET", "/prompt"), ("GET", "/diff"),
                     ("GET", "/dialog"), ("GET", "/result"), ("GET", "/status"),
                     ("POST", "/tools/build"), ("POST", "/tools/test"),
                     ("GET", "/admin/status"), ("POST", "/admin/result"),
                     ("POST", "/admin/agent-exited"),
                     ("GET", "/task"), ("GET", "/hidden"), ("GET", "/reference"),
                     ("GET", "/../ssebench/task/task.json"),
                     ("GET", "/%2e%2e/ssebench/task/task.json"),
                     ("GET", "//ssebench/task/task.json"),
                     ("GET", "/diff?path=/ssebench/task/task.json"),
                     ("GET", "/ssebench/task/hidden/hidden_tests")]:
    body = {"status": "passed"} if path.startswith("/admin/") else None
    status, _, text = call(method, path, body)
    answers[method + " " + path] = [status, text]
mcp_headers = {"Accept": "application/json, text/event-stream"}
status, headers, text = call("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "integrity", "version": "1"}}}, mcp_headers)
answers["mcp initialize"] = [status, text]
session = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id", "")
mcp_headers["Mcp-Session-Id"] = session
call("POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, mcp_headers)
listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
status, _, text = call("POST", "/mcp", listing, mcp_headers)
answers["mcp tools/list"] = [status, text]
tools = [tool["name"] for tool in json.loads(text)["result"]["tools"]]
for number, name in enumerate(tools + ["read_file", "hidden_tests", "reference_patch"], 3):
    status, _, text = call("POST", "/mcp", {"jsonrpc": "2.0", "id": number, "method": "tools/call",
        "params": {"name": name, "arguments": {"path": "/ssebench/task/task.json"}}}, mcp_headers)
    answers["mcp tools/call " + name] = [status, text]
for method in ("resources/list", "prompts/list", "resources/read"):
    status, _, text = call("POST", "/mcp", {"jsonrpc": "2.0", "id": 99, "method": method,
        "params": {"uri": "file:///ssebench/task/task.json"}}, mcp_headers)
    answers["mcp " + method] = [status, text]
print(json.dumps({"tools": tools, "answers": answers}))
"""

# The admin socket, as the agent: connect, and ask for the admin status.
ADMIN_SOCKET = r"""
import json, socket
outcome = {}
for path in ("/run/ssebench/admin.sock",):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(path)
        s.sendall(b"GET /admin/status HTTP/1.0\r\n\r\n")
        outcome[path] = "answered: " + s.recv(4096).decode("utf-8", "replace")
    except OSError as error:
        outcome[path] = type(error).__name__
    finally:
        s.close()
print(json.dumps(outcome))
"""


def connects(targets: list[tuple[str, int]], seconds: float = 3) -> str:
    """A program that tries a TCP connection to each (host, port), all at once, and
    prints, per target, "connected" or the error's name."""
    return rf"""
import json, socket, threading
outcome = {{}}
def attempt(host, port):
    s = socket.socket()
    s.settimeout({seconds})
    try:
        s.connect((host, port))
        outcome[host + ":" + str(port)] = "connected"
    except OSError as error:
        outcome[host + ":" + str(port)] = type(error).__name__
    finally:
        s.close()
threads = [threading.Thread(target=attempt, args=target) for target in {targets!r}]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(outcome))
"""


def resolves(names: list[str]) -> str:
    """A program that looks names up and prints, per name, its addresses or the error."""
    return rf"""
import json, socket
outcome = {{}}
for name in {names!r}:
    try:
        outcome[name] = sorted({{a[4][0] for a in socket.getaddrinfo(name, 443)}})
    except OSError as error:
        outcome[name] = type(error).__name__
print(json.dumps(outcome))
"""

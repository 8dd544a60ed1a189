"""The web UI: watch runs live, read their results, launch and reach them (docs/webui.md).

settings.py   what it is started with, and the refusal to listen openly without a token
security.py   the token, Origin/Host and hosted-mode checks every request goes through
catalog.py    the run list: live runs from the backend, finished ones from results/
watch.py      one run's dialog, diff, logs and grade, from its files or its daemon
launcher.py   `ssebench run` processes started from the page
terminal.py   a shell in a run's container, through a pseudo-terminal
app.py        the ASGI application that routes requests to the above
static/       the page (no build step), with xterm.js vendored

It needs the `webui` extra (starlette, uvicorn); nothing else in ssebench imports it.
"""

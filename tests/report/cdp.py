"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (test helper, stdlib only).

Chromium reads CDP commands from fd 3 and writes replies and events to fd 4, each a JSON message
ending in a NUL byte: no websocket library, no port, nothing listening on the network.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path

#: Headless, as root, with every background fetch off and all network traffic sent nowhere:
#: the report must draw from its own bytes.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-sync", "--disable-breakpad", "--disable-dev-shm-usage", "--mute-audio",
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,900", "--remote-debugging-pipe",
)


class Browser:
    """One headless Chromium with one page attached (flat session)."""

    def __init__(self, chromium: str, profile: Path, timeout_s: float = 60.0):
        self.timeout_s = timeout_s
        self._to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, self._from_child_w = os.pipe()
        r, w = self._to_child_r, self._from_child_w

        def fds() -> None:  # in the child: its fd 3 reads our commands, its fd 4 writes replies
            a, b = os.dup(r), os.dup(w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, pass_fds=(3, 4))  # noqa: PLW1509 -- single-threaded test process; dup2 onto fds 3/4 is what Chromium's --remote-debugging-pipe reads
        os.close(self._to_child_r)
        os.close(self._from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    # --- wire ---------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer over the DevTools pipe")
            ready, _, _ = select.select([self._from_child_r], [], [], left)
            if ready:
                chunk = os.read(self._from_child_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, *, session: bool = True) -> dict:
        """Send one command and wait for its reply (events seen meanwhile are kept in ``events``)."""
        self._next_id += 1
        msg: dict = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout_s: float | None = None) -> dict:
        """Wait for an event (or return one already seen)."""
        for e in self.events:
            if e.get("method") == method:
                return e
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            e = self._read_message(deadline)
            self.events.append(e)
            if e.get("method") == method:
                return e

    # --- page -----------------------------------------------------------------------------------
    def attach(self) -> None:
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.send(f"{domain}.enable")
        self.send("Network.emulateNetworkConditions",
                  {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})

    def open(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (failed loads included)."""
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}".strip())
        return out

    def viewport(self, width: int, height: int, *, mobile: bool = False, scale: float = 1.0) -> None:
        """Lay the page out at ``width`` x ``height`` CSS pixels (``mobile``: a phone's viewport, touch on)."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile})
        self.send("Emulation.setTouchEmulationEnabled", {"enabled": mobile})

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """A PNG of the whole page (``full_page``) or of what the viewport shows (the first screen)."""
        import base64

        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full_page})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child_w, self._from_child_r):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

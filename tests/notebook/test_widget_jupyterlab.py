"""The widget in a real JupyterLab: a server on loopback, a notebook with the CPU source, Debian's Chromium.

The test starts ``jupyter lab`` on a free loopback port with a token and its own
configuration, runtime and settings folders; the kernel imports this checkout
(``PYTHONPATH``). Playwright drives the system's Chromium (never a browser of
its own): the notebook's first cell shows the widget, frames arrive, a drag on
the image moves the kernel's camera, and a kernel restart leaves neither a
thread of the widget nor a port behind.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("jupyterlab", reason="the JupyterLab test needs jupyterlab (pip install -e '.[test]')")
pytest.importorskip("anywidget", reason="the notebook widget needs anywidget (pip install 'optixasync[notebook]')")
pytest.importorskip("ipykernel", reason="the JupyterLab test needs ipykernel (pip install -e '.[test]')")
pytest.importorskip("playwright.sync_api", reason="the browser test needs Playwright for Python (pip install playwright)")
psutil = pytest.importorskip("psutil", reason="the JupyterLab test needs psutil (a dependency of ipykernel)")

from playwright.sync_api import Page, sync_playwright  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"no system Chromium at {CHROMIUM} (apt-get install chromium)")

CELLS = [
    # 0: the widget, with the CPU source (no GPU)
    "from optixasync.notebook import ViewerWidget\n"
    "from optixasync.viewer import CpuFrameSource\n"
    "widget = ViewerWidget(CpuFrameSource(320, 180, max_samples=10**9))\n"
    "widget",
    # 1: what the kernel knows: its pid, its connection's ports, the widget's threads, the camera
    "import json, os, threading\n"
    "from ipykernel import get_connection_info\n"
    "info = json.loads(get_connection_info())\n"
    "w = globals().get('widget')\n"
    "print('STATE', json.dumps({'pid': os.getpid(),\n"
    "    'ports': sorted(info[k] for k in ('shell_port', 'iopub_port', 'stdin_port', 'control_port', 'hb_port')),\n"
    "    'threads': sorted(t.name for t in threading.enumerate() if t.name.startswith('optixasync')),\n"
    "    'eye': list(w.state.snapshot().camera.eye) if w is not None else None}))",
]


def notebook(cells: list[str]) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "cells": [{"cell_type": "code", "id": f"cell{k}", "metadata": {}, "execution_count": None, "outputs": [],
                       "source": source} for k, source in enumerate(cells)]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float = 30.0, what: str = "condition", interval: float = 0.1):
    end = time.perf_counter() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.perf_counter() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server on 127.0.0.1 with a token, serving ``tmp_path/work``; yields (url, token, folder)."""
    work, port, token = tmp_path / "work", free_port(), secrets.token_hex(16)
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    for name, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                         ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                         ("IPYTHONDIR", "ipython")):
        env[name] = str(tmp_path / folder)
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
               "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
               "--ServerApp.terminals_enabled=False", "--allow-root"]  # CI runs as root
    log = (tmp_path / "jupyterlab.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if server.poll() is not None:
            raise AssertionError(f"jupyter lab exited with {server.returncode}:\n"
                                 + (tmp_path / "jupyterlab.log").read_text(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    try:
        wait_for(ready, 90, "the JupyterLab server", interval=0.3)
        yield url, token, work
    finally:
        try:
            children = psutil.Process(server.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()
        gone, alive = psutil.wait_procs(children, timeout=15)
        for process in alive:
            process.kill()
        assert not alive, f"kernels left running after the server stopped: {alive}"


def lab(page: Page, script: str, arg=None):
    """Evaluate ``script`` (the body of an async function of ``app`` and ``arg``) in JupyterLab."""
    return page.evaluate(f"async ([arg]) => {{ const app = window.jupyterapp; {script} }}", [arg])


def run_cell(page: Page, index: int) -> None:
    lab(page, "const panel = app.shell.currentWidget; panel.content.activeCellIndex = arg;"
              "await app.commands.execute('notebook:run-cell');", index)


def cell_state(page: Page, index: int) -> dict | None:
    outputs = lab(page, "return app.shell.currentWidget.content.widgets[arg].model.outputs.toJSON();", index)
    for output in outputs or []:
        text = output.get("text") or ""
        text = "".join(text) if isinstance(text, list) else text
        for line in text.splitlines():
            if line.startswith("STATE "):
                return json.loads(line[6:])
        if output.get("output_type") == "error":
            raise AssertionError(f"cell {index} failed: {output.get('ename')}: {output.get('evalue')}")
    return None


def kernel_state(page: Page) -> dict:
    lab(page, "app.shell.currentWidget.content.widgets[1].model.outputs.clear();")
    run_cell(page, 1)
    return wait_for(lambda: cell_state(page, 1), 60, "the kernel's state")


def widget_stats(page: Page) -> dict | None:
    """The page-side counters of the newest view of the widget (views of a previous kernel are marked old)."""
    return page.evaluate("() => { const el = document.querySelector('.oxa-widget:not([data-old])');"
                         " return el && el.viewerStats ? JSON.parse(JSON.stringify(el.viewerStats)) : null; }")


def listening_ports(pid: int) -> set[int]:
    try:
        connections = psutil.Process(pid).net_connections(kind="inet")
    except psutil.NoSuchProcess:
        return set()
    return {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}


def kernel_idle(page: Page) -> bool:
    return lab(page, "const s = app.shell.currentWidget && app.shell.currentWidget.sessionContext;"
                     "return !!(s && s.session && s.session.kernel && s.session.kernel.status === 'idle');")


def test_the_widget_in_jupyterlab(jupyterlab, tmp_path):
    url, token, work = jupyterlab
    (work / "widget.ipynb").write_text(json.dumps(notebook(CELLS)))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"{url}/lab/tree/widget.ipynb?token={token}")
            wait_for(lambda: page.evaluate("() => !!window.jupyterapp"), 90, "JupyterLab to load")
            wait_for(lambda: kernel_idle(page), 90, "the kernel")

            baseline = kernel_state(page)  # before the widget: the kernel's own threads and ports
            ports = listening_ports(baseline["pid"])
            assert set(baseline["ports"]) <= ports and baseline["threads"] == []

            # frames arrive in the widget
            run_cell(page, 0)
            wait_for(lambda: (widget_stats(page) or {}).get("drawn", 0) >= 5, 60, "frames in the widget")
            first = widget_stats(page)
            assert first["connected"] and first["width"] == 320 and first["height"] == 180
            wait_for(lambda: widget_stats(page)["drawn"] >= first["drawn"] + 5, 30, "more frames")
            before = kernel_state(page)
            assert {"optixasync-notebook", "optixasync-cpu-source"} <= set(before["threads"]), before
            # the widget opened no port: frames travel over the kernel's own connection
            assert before["pid"] == baseline["pid"] and listening_ports(before["pid"]) == ports

            # a drag on the image moves the kernel's camera, and frames of the new camera arrive
            view = page.locator(".oxa-widget .oxa-view")
            view.scroll_into_view_if_needed()
            box = view.bounding_box()
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            page.mouse.move(x, y)
            page.mouse.down()
            page.mouse.move(x + 120, y + 30, steps=6)
            page.mouse.up()
            wait_for(lambda: widget_stats(page)["cameraId"] > first["cameraId"], 30, "a frame of the moved camera")
            after = kernel_state(page)
            assert after["eye"] != before["eye"]
            page.screenshot(path=str(tmp_path / "notebook.png"))
            shot = os.environ.get("OPTIXASYNC_NOTEBOOK_SCREENSHOT")  # where the docs' picture is made
            if shot:
                view.evaluate("el => el.closest('.jp-Cell').scrollIntoView()")
                page.locator(".jp-Cell").first.screenshot(path=shot)

            # a kernel restart leaves no thread and no port of the widget behind
            old_pid = before["pid"]
            page.evaluate("() => document.querySelectorAll('.oxa-widget').forEach(el => { el.dataset.old = '1'; })")
            lab(page, "await app.shell.currentWidget.sessionContext.session.kernel.restart();")
            wait_for(lambda: not psutil.pid_exists(old_pid) or psutil.Process(old_pid).status() == psutil.STATUS_ZOMBIE,
                     60, "the old kernel to exit")
            wait_for(lambda: kernel_idle(page), 90, "the restarted kernel")
            fresh = kernel_state(page)
            assert fresh["pid"] != old_pid and fresh["threads"] == [] and fresh["eye"] is None
            assert not listening_ports(old_pid)
            fresh_ports = listening_ports(fresh["pid"])
            assert set(fresh["ports"]) <= fresh_ports and len(fresh_ports) == len(ports)

            # and the widget works again in the new kernel
            run_cell(page, 0)
            wait_for(lambda: (widget_stats(page) or {}).get("drawn", 0) >= 3, 60, "frames after the restart")
            assert listening_ports(fresh["pid"]) == fresh_ports
            assert not problems, problems
        finally:
            browser.close()

"""Binder, as far as this machine allows: a fresh environment from binder/requirements.txt, then
binder/postBuild, then that environment's JupyterLab in headless Chromium opens a learner notebook
and runs it top to bottom (first cell included)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
import venv

import pytest

from autograder import layout
from tests.conftest import ROOT
from tests.test_ui_browser import ARGS, CHROMIUM, HAVE_PLAYWRIGHT, free_port, open_and_run_all

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(
    not (CHROMIUM and HAVE_PLAYWRIGHT), reason="needs chromium and playwright: run scripts/setup-browser.sh")]


def test_binder_environment_opens_and_runs_a_notebook(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV", "JUPYTER"))}
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    bindir = tmp_path / "venv" / "bin"
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    p = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    p = subprocess.run(["bash", "binder/postBuild"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0 and "course ready" in p.stdout, p.stdout[-2000:] + p.stderr[-3000:]

    work = tmp_path / "work"
    work.mkdir()
    notebook = layout.stage_files("s02").learner()
    shutil.copy(notebook, work / notebook.name)
    port, token = free_port(), "pcw-binder-token"
    lab_env = dict(env, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.Popen([str(bindir / "jupyter"), "lab", "--no-browser", "--ip", "127.0.0.1", "--port", str(port),
                             f"--ServerApp.token={token}", "--allow-root", f"--ServerApp.root_dir={work}"],
                            env=lab_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            open_and_run_all(page, url, token, notebook.name, tmp_path)
            try:
                page.wait_for_function("document.body.innerText.includes('is not implemented yet')", timeout=180_000)
                page.wait_for_function("document.body.innerText.includes('| Idle')", timeout=180_000)
            finally:
                page.screenshot(path=str(tmp_path / "binder.png"), full_page=True)
            text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "course ready" in text and "Traceback" not in text

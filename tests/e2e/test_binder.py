"""Binder, as far as this machine allows: a fresh environment from binder/requirements.txt, then
binder/postBuild, then that environment's JupyterLab in headless Chromium opens a learner notebook
and runs it top to bottom (first cell included)."""
from __future__ import annotations

import os
import shutil
import subprocess
import venv

import pytest

from autograder.core import layout
from tests.conftest import ROOT
from tests.e2e.test_ui_browser import ARGS, CHROMIUM, HAVE_PLAYWRIGHT, open_and_run_all, start_lab, stop_lab
from tests.support.machine import scaled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(
    not (CHROMIUM and HAVE_PLAYWRIGHT), reason="needs chromium and playwright: run scripts/setup-browser.sh")]


def test_binder_environment_opens_and_runs_a_notebook(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV", "JUPYTER"))}
    # pip compiles every module it installs to bytecode by default (half of this test's 70 s of installs,
    # torch's thousands of files included); what this test proves does not depend on it: the modules
    # the environment imports are compiled when first imported. PIP_COMPILE reaches postBuild's pip too.
    env["PIP_COMPILE"] = "0"
    # nor pip's check for a newer pip (a look-up on the index, and a file per environment in the user's cache)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    bindir = tmp_path / "venv" / "bin"
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    p = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=scaled(1200))
    assert p.returncode == 0, p.stderr[-3000:]
    p = subprocess.run(["bash", "binder/postBuild"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=scaled(1200))
    assert p.returncode == 0 and "course ready" in p.stdout, p.stdout[-2000:] + p.stderr[-3000:]

    work = tmp_path / "work"
    work.mkdir()
    notebook = layout.stage_files("s02").learner()
    shutil.copy(notebook, work / notebook.name)
    proc, url, token = start_lab(str(bindir / "python"), work, tmp_path, dict(env, JUPYTER_DATA_DIR=str(tmp_path / "data")))
    try:
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
        stop_lab(proc)
    assert "course ready" in text and "Traceback" not in text

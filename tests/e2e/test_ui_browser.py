"""A real JupyterLab in headless Chromium: an instructor opens a notebook, clicks Run All, and sees
green checks and the plot. Needs chromium and playwright (scripts/setup-browser.sh; CI installs them)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from autograder.core import layout
from tests.conftest import ROOT
from tests.support.machine import scaled

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    import playwright.sync_api  # noqa: F401
    HAVE_PLAYWRIGHT = True
except ImportError:
    HAVE_PLAYWRIGHT = False

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(
    not (CHROMIUM and HAVE_PLAYWRIGHT),
    reason="browser test needs chromium and playwright: run scripts/setup-browser.sh")]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(python: str, work, tmp_path, env: dict) -> tuple[subprocess.Popen, str, str]:
    """JupyterLab (from ``python``'s environment) serving ``work``, with settings that keep every cell in
    the page and no news toast; returns (process, url, token) once it answers."""
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    nb_settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    nb_settings.mkdir(parents=True)
    # every cell stays in the page (no virtual scrolling), so the test reads all outputs
    (nb_settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port, token = free_port(), "pcw-test-token"
    env = dict(env, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), MPLBACKEND="module://matplotlib_inline.backend_inline")
    proc = subprocess.Popen([python, "-m", "jupyter", "lab", "--no-browser", "--ip", "127.0.0.1", "--port", str(port),
                             f"--ServerApp.token={token}", "--allow-root", f"--ServerApp.root_dir={work}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=scaled(1))
            return proc, url, token
        except OSError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail("jupyter lab did not start")


def stop_lab(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=scaled(10))
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab for the module's tests (each opens its own notebook in a fresh workspace and page):
    yields (url, token, folder for screenshots, the folder it serves, holding the instructor notebooks)."""
    tmp = tmp_path_factory.mktemp("lab")
    work = tmp / "work"
    work.mkdir()
    for sid in ("s01", "s03", "s05", "s07"):
        shutil.copy(layout.stage_files(sid).instructor(), work)
    proc, url, token = start_lab(sys.executable, work, tmp, dict(os.environ, PYTHONPATH=str(ROOT)))
    yield url, token, tmp, work
    stop_lab(proc)


def open_and_run_all(page, url: str, token: str, notebook: str, shots) -> None:
    # a fresh workspace per notebook: only this notebook's panel is in the page
    page.goto(f"{url}/lab/workspaces/{notebook.split('.')[0]}/tree/{notebook}?token={token}&reset")
    try:
        page.wait_for_selector(".jp-Notebook", timeout=scaled(60_000))
        page.wait_for_function("document.body.innerText.includes('| Idle')", timeout=90_000)
    except Exception:
        page.screenshot(path=str(shots / f"{notebook}-not-ready.png"))
        raise
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator("[data-command='runmenu:run-all']").click(timeout=scaled(30_000))


def test_s01_instructor_notebook_run_all_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    url, token, tmp, _ = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/lab/tree/{layout.stage_files('s01').instructor().name}?token={token}")
        page.wait_for_selector(".jp-Notebook", timeout=scaled(60_000))
        # the kernel must be up before Run All, or the click is lost
        page.wait_for_function("document.body.innerText.includes('| Idle')", timeout=90_000)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator("[data-command='runmenu:run-all']").click(timeout=scaled(30_000))
        try:
            page.wait_for_selector(".jp-RenderedImage img", timeout=scaled(90_000))
        finally:
            page.screenshot(path=str(tmp / "after_run_all.png"))
        page.wait_for_function("document.body.innerText.includes('prefill work saved')", timeout=90_000)
        text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
        page.screenshot(path=str(tmp / "s01_run_all.png"), full_page=False)
        browser.close()
    assert text.count("✅") >= 30 and "❌" not in text and "Traceback" not in text


def test_s03_s05_widgets_render_and_step_in_jupyterlab(lab):
    """The block-table stepper (stage 3) and the radix-tree view (stage 5) render as live widgets,
    and pressing "next" in the stepper redraws its picture."""
    from playwright.sync_api import sync_playwright

    url, token, tmp, _ = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        open_and_run_all(page, url, token, layout.stage_files("s03").instructor().name, tmp)
        try:
            page.wait_for_selector(".widget-slider", timeout=scaled(120_000))
        finally:
            page.screenshot(path=str(tmp / "s03_after_run.png"), full_page=True)
        button = page.locator(".widget-button", has_text="next").first
        button.scroll_into_view_if_needed()
        slider = page.locator(".widget-slider .widget-readout").first
        before = slider.inner_text()
        button.click()
        page.wait_for_function(f"() => document.querySelector('.widget-slider .widget-readout').innerText !== {before!r}",
                               timeout=scaled(30_000))
        # the stepper's output area redraws the pool for the new step
        page.wait_for_selector(".widget-output .jp-RenderedImage img", timeout=scaled(60_000))
        page.wait_for_function("document.body.innerText.includes('| Idle')", timeout=60_000)
        page.screenshot(path=str(tmp / "s03_stepper.png"))
        outputs3 = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())

        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        open_and_run_all(page, url, token, layout.stage_files("s05").instructor().name, tmp)
        page.wait_for_selector(".jp-RenderedImage img", timeout=scaled(120_000))
        page.wait_for_selector(".widget-slider", timeout=scaled(120_000))
        page.screenshot(path=str(tmp / "s05_tree.png"))
        outputs5 = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
        browser.close()
    for text in (outputs3, outputs5):
        assert "❌" not in text and "Traceback" not in text and "Error" not in text


def test_s07_instructor_notebook_run_all_in_jupyterlab(lab):
    """Stage 7 under Run All: serving runs with progress bars, the calibration, four plots, the decision
    record (shown and written next to the notebook) and every check green."""
    from playwright.sync_api import sync_playwright

    url, token, tmp, work = lab
    notebook = work / layout.stage_files("s07").instructor().name
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        open_and_run_all(page, url, token, notebook.name, tmp)
        try:  # the quiz's check is the last code cell
            page.wait_for_function("document.body.innerText.includes('concept quiz: 6/6')", timeout=360_000)
        finally:
            page.screenshot(path=str(tmp / "s07_run_all.png"), full_page=True)
        text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
        images = page.locator(".jp-RenderedImage img").count()
        browser.close()
    assert "❌" not in text and "Traceback" not in text and text.count("✅") >= 30
    assert "Decision record: thrashing" in text and images >= 4
    assert (work / "07_serving_decision_record.json").is_file()

"""Click-to-paint in a real browser (issue 17, item 2): from the input event in Chromium to the updated output
in the DOM, for one interaction of each widget of the notebooks.

Used by tests/browser/test_click_to_paint_browser.py (which reports the time and asserts only that the output
changes) and by
``benchmarks/run.py --only browser`` (reports against ``TARGET_MS``).

How one interaction is timed, all inside the page (one clock, ``performance.now()``):

* before the input, a capture listener on the document records the timestamp of the input event on the control
  (``change`` of a <select>, ``click`` of a button, the Enter ``keydown`` that commits a slider's readout), and a
  MutationObserver watches the widget's whole DOM, leaving out the control itself;
* every mutation of an output (an <img> whose src changed once the new image is decoded, an HTML output's
  children or text) is stamped in the next animation frame, i.e. when the browser can paint it;
* after the input, the kernel goes idle and the widget stays quiet for ``QUIET_MS``; the interaction's time is
  the last stamp (the whole update painted) minus the input event's timestamp (for the fine-tuning panel, whose
  "start" begins a training run that keeps redrawing, the first: the panel answering the click).
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from . import jupyterlab as jl

TARGET_MS = 200.0       # make bench's target
QUIET_MS = 400


@dataclass(frozen=True)
class Interaction:
    notebook: str        # stem of notebooks/<stem>.py
    widget: str          # CSS selector of the widget's root
    control: str         # CSS class selector of the control's root, inside the widget
    action: str          # "select" (another option), "click", "slider" (type into the readout, Enter)
    values: tuple = ()   # select: labels to alternate between; slider: values to alternate between
    until: str = "last"  # "last": the whole update painted; "first": the first output painted

    @property
    def name(self) -> str:
        return f"{self.widget.lstrip('.')} {self.control.lstrip('.')}"


INTERACTIONS = [
    Interaction("11_1_bidirectional_encoders", ".attention-explorer", ".explorer-layer", "select", ("4", "1")),
    Interaction("11_1b_subword_tokenization", ".subword-explorer", ".subword-sample", "click"),
    Interaction("11_2_masked_language_modeling", ".mask-sampler", ".sampler-resample", "click"),
    Interaction("11_2_masked_language_modeling", ".fill-mask-explorer", ".fillmask-k", "slider", ("8", "5")),
    Interaction("11_2_masked_language_modeling", ".language-sampler", ".sampler-alpha", "slider", ("0.7", "0.3")),
    Interaction("11_3_contextual_embeddings", ".sense-clusters", ".clusters-word", "select", ("mouse", "bank")),
    Interaction("11_3_contextual_embeddings", ".nearest-sense", ".wsd-layer", "select", ("L2", "mean of last 4")),
    Interaction("11_3_contextual_embeddings", ".anisotropy-explorer", ".aniso-layer", "slider", ("6", "2")),
    Interaction("11_4a_sentence_classification", ".finetuning-panel", ".ft-start", "click", until="first"),
    Interaction("11_4b_sequence_labelling", ".alignment-viewer", ".align-pick", "select"),
    Interaction("11_4b_sequence_labelling", ".qa-span-viewer", ".qa-pick", "select"),
    Interaction("11_5_span_based", ".span-mask-sampler", ".spansampler-resample", "click"),
    Interaction("11_5_span_based", ".span-enumerator", ".enumerator-limit", "slider", ("3", "6")),
]

_EVENTS = {"select": ["change"], "click": ["click"], "slider": ["keydown"]}

_ARM = """(arg) => {
  const [widgetSel, controlSel, events] = arg;
  if (window.__ctpCleanup) window.__ctpCleanup();
  const root = document.querySelector(widgetSel);
  const control = root && root.querySelector(controlSel);
  if (!root || !control) throw new Error('not found: ' + widgetSel + ' ' + controlSel);
  const s = window.__ctp = {t0: null, first: null, last: null, mutations: 0, lastMutation: null};
  const stamp = () => requestAnimationFrame(() => {
    const t = performance.now();
    if (s.first === null) s.first = t;
    s.last = Math.max(s.last || 0, t);
  });
  const onEvent = (e) => {
    if (s.t0 !== null || !control.contains(e.target)) return;
    if (e.type === 'keydown' && e.key !== 'Enter') return;
    s.t0 = e.timeStamp;
  };
  for (const type of events) document.addEventListener(type, onEvent, {capture: true});
  const observer = new MutationObserver((records) => {
    if (s.t0 === null) return;
    for (const m of records) {
      const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
      if (!el || control.contains(el)) continue;
      s.mutations++;
      s.lastMutation = performance.now();
      if (el.tagName === 'IMG' && m.attributeName === 'src' && el.src) el.decode().then(stamp, stamp);
      else stamp();
    }
  });
  observer.observe(root, {subtree: true, childList: true, attributes: true, characterData: true});
  window.__ctpCleanup = () => {
    observer.disconnect();
    for (const type of events) document.removeEventListener(type, onEvent, {capture: true});
  };
}"""


def _act(page, it: Interaction, k: int) -> None:
    sel = f"{it.widget} {it.control}"
    if it.action == "select":
        options, current = jl.dropdown_options(page, f"{sel} select")
        # the given labels in turn; else the last options (the first may be what the widget already shows;
        # beware of options that draw the same, e.g. the mean and the sum of layers under cosine)
        prefer = [v for v in it.values if v != current] or [o for o in reversed(options) if o != current]
        page.locator(f"{sel} select").first.select_option(label=prefer[0])
    elif it.action == "click":
        page.locator(sel).first.click()
    elif it.action == "slider":
        jl.set_slider(page, sel, it.values[k % len(it.values)])
    else:
        raise ValueError(it.action)


def measure_once(page, notebook_name: str, it: Interaction, k: int = 0, timeout: float = 60) -> float:
    """One interaction: milliseconds from its input event to its output painted (see the module docstring)."""
    jl.wait_until_idle(page, notebook_name)
    page.locator(it.widget).first.scroll_into_view_if_needed()
    page.evaluate(_ARM, [it.widget, it.control, _EVENTS[it.action]])
    _act(page, it, k)
    key = "first" if it.until == "first" else "last"
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"() => window.__ctp.t0 !== null && window.__ctp.{key} !== null",
                               timeout=timeout * 1000, polling=50)
    except PlaywrightTimeout:
        state = page.evaluate("() => window.__ctp")
        raise AssertionError(f"{it.name}: no output of the widget changed within {timeout:.0f} s of the input "
                             f"(input event seen: {state['t0'] is not None})") from None
    if it.until == "last":
        jl.wait_until_idle(page, notebook_name, timeout=timeout)
        page.wait_for_function(f"""() => {{
            const s = window.__ctp;
            return performance.now() - Math.max(s.lastMutation || 0, s.last || 0) > {QUIET_MS};
        }}""", timeout=timeout * 1000, polling=50)
    state = page.evaluate("() => { const s = window.__ctp; window.__ctpCleanup(); return s; }")
    return state[key] - state["t0"]


def measure(page, notebook_name: str, it: Interaction, repeats: int = 3, warmup: int = 1) -> list[float]:
    """``warmup`` untimed interactions (a lecturer's caches are warm), then ``repeats`` timed ones (ms)."""
    if it.until == "first":  # the fine-tuning panel: start once, timed, then stop the run it began
        ms = measure_once(page, notebook_name, it)
        page.locator(f"{it.widget} .ft-stop").first.click()
        jl.wait_widget(page, f"""() => {{
            const e = document.querySelector('{it.widget} .ft-status');
            const t = e ? e.innerText : '';
            return t.includes('stopped') || t.includes('finished') || t.includes('cache') || t.includes('⚠');
        }}""", "stop the run started by the timed click", timeout=600)
        jl.wait_until_idle(page, notebook_name)
        return [ms]
    for k in range(warmup):
        measure_once(page, notebook_name, it, k)
    return [measure_once(page, notebook_name, it, warmup + k) for k in range(repeats)]


def summary(times: list[float]) -> dict:
    s = sorted(times)
    return {"median_ms": statistics.median(s), "max_ms": s[-1], "n": len(s), "times_ms": [round(t, 1) for t in s]}


def report_line(it: Interaction, times: list[float], target: float) -> str:
    m = summary(times)
    verdict = f"median < {target:.0f} ms {'met' if m['median_ms'] < target else 'MISSED'}"
    return f"  {'_'.join(it.notebook.split('_')[:2]):6s} {it.name:42s} median {m['median_ms']:6.0f} ms  max {m['max_ms']:6.0f} ms  {verdict}"


def to_json(results: dict) -> str:
    return json.dumps(results, indent=2)

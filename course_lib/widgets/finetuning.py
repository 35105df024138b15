"""The fine-tuning panel of notebook 11.4a: pick a strategy, a learning rate and epochs, start, watch, stop.

Training runs in a background thread: the kernel keeps answering the other widgets (torch releases Python's
lock while it computes), the curves are redrawn from the thread after every epoch and about once a second in
between, and the stop button ends the run after the current step, keeping its finished epochs. Finished runs
stay on the chart, overlaid, and in the table under it. Runs are cached (``finetuning.training``), so asking
for a run that was trained before shows it at once: a run is found by its key (its settings, data and starting
weights), whatever name it was trained under, so the notebook's runs and the shipped ones are found too.

Head only trains nothing but the head, at ``head_lr``: the learning-rate slider (the encoder's) is disabled then,
and the run's config carries ``frozen_lr`` as the encoder's rate, which changes nothing but its key (the
notebook's value, so that its head-only runs are found).
"""
from __future__ import annotations

import threading
import time

import ipywidgets as W

from ..finetuning.classify import classifier_run_key, train_classifier
from ..finetuning.runs import TrainConfig
from ..finetuning.shipped import name_filed_under
from ..views.common import error_html, figure_png
from ..views.finetuning import comparison_rows, curves_figure, table_html

LEARNING_RATES = (1e-5, 2e-5, 3e-5, 5e-5, 1e-4, 1e-3)
HEAD_LR = 5e-3
HEAD_NOTE = "<i>head only:"  # the status line that says at which rate the head trains
FROZEN_LR = 5e-5   # the encoder's rate in a head-only run's config: unused (nothing of it trains), 11.4a's value


class FineTuningPanel(W.VBox):
    """Strategy (head / last k / full), pooling, learning rate, epochs; start and stop; live, overlaid curves.

    make_model(pooling) -> a fresh classifier (e.g. ``lambda p: pretrained_classifier(LABELS, pooling=p)``);
    train, test, collate: the examples and their collate function (see ``finetuning.data``);
    baseline: held-out accuracy of the majority class, drawn as a line.
    """

    def __init__(self, make_model, train, test, collate, baseline: float | None = None, n_layers: int = 6,
                 batch_size: int = 16, head_lr: float = HEAD_LR, redraw_seconds: float = 1.0, name: str = "panel",
                 frozen_lr: float = FROZEN_LR):
        self.make_model, self.train, self.test, self.collate = make_model, train, test, collate
        self.baseline, self.batch_size, self.head_lr, self.frozen_lr = baseline, batch_size, head_lr, frozen_lr
        self._empty_chart: bytes | None = None
        self.redraw_seconds, self.name = redraw_seconds, name
        self.runs: list = []          # finished or stopped runs, overlaid
        self.current = None           # the run in progress (its TrainRun, updated by the loop)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._last_draw = 0.0   # when the last redraw ended
        self._draw_seconds = 0.0  # how long it took
        self._clock = time.perf_counter
        choices = [("head only", "head")] + [(f"last {k}", f"last-{k}") for k in (1, 2, 4) if k < n_layers] + [
            ("full", "full")]
        self.strategy = W.Dropdown(options=choices, value="full", description="train")
        self.pooling = W.Dropdown(options=[("[CLS]", "cls"), ("mean", "mean")], value="cls", description="pooling")
        self.lr = W.SelectionSlider(options=[(f"{x:g}", x) for x in LEARNING_RATES], value=3e-5,
                                    description="learning rate", continuous_update=False,
                                    style={"description_width": "90px"})
        self.epochs = W.IntSlider(value=2, min=1, max=4, description="epochs", continuous_update=False)
        self.start_button = W.Button(description="start", icon="play", button_style="success")
        self.stop_button = W.Button(description="stop", icon="stop", button_style="danger", disabled=True)
        self.clear_button = W.Button(description="clear runs", icon="trash")
        for b in (self.start_button, self.stop_button, self.clear_button):   # three in the controls' column
            b.layout.width = "108px"
        self.status = W.HTML()
        self.chart = W.Image(format="png", layout=W.Layout(flex="0 1 auto", min_width="0", height="auto",
                                                           object_fit="contain", object_position="left top"))
        self.table = W.HTML()
        for w, cls in [(self.strategy, "ft-strategy"), (self.pooling, "ft-pooling"), (self.lr, "ft-lr"),
                       (self.epochs, "ft-epochs"), (self.start_button, "ft-start"), (self.stop_button, "ft-stop"),
                       (self.clear_button, "ft-clear"), (self.status, "ft-status"), (self.chart, "ft-chart"),
                       (self.table, "ft-table")]:
            w.add_class(cls)
        # the controls in a column beside the curves: stacked, the panel and its cell were taller than a 1280x720
        # slide at the lecture preset's fonts
        controls = W.VBox([self.strategy, self.pooling, self.lr, self.epochs,
                           W.HBox([self.start_button, self.stop_button, self.clear_button]), self.status],
                          layout=W.Layout(flex="0 0 auto", width="340px"))
        super().__init__([W.HBox([controls, self.chart], layout=W.Layout(align_items="flex-start", width="100%")),
                          self.table])
        self.add_class("finetuning-panel")
        self.strategy.observe(lambda _: self._strategy_changed(), "value")
        self._strategy_changed()
        self.start_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self.clear_button.on_click(lambda _: self.clear())
        self._draw()

    # ------------------------------------------------------------------ controls
    def config(self) -> TrainConfig:
        lr = self.frozen_lr if self.strategy.value == "head" else self.lr.value  # head only: the slider's lr is unused
        return TrainConfig(lr=lr, epochs=self.epochs.value, batch_size=self.batch_size,
                           lr_overrides=(("classifier.", self.head_lr),))

    def _strategy_changed(self) -> None:
        """Head only: the encoder is frozen, so its learning rate (the slider) is disabled and the status says at
        which rate the head trains."""
        head = self.strategy.value == "head"
        self.lr.disabled = head
        if head and not self.running:
            self.status.value = (f"{HEAD_NOTE} the encoder is frozen and the head trains at lr {self.head_lr:g}; "
                                 "the learning-rate slider is the encoder's</i>")
        elif not self.running and self.status.value.startswith(HEAD_NOTE):
            self.status.value = ""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start a run with the current settings in a background thread (returns at once)."""
        if self.running:
            self.status.value = error_html("a run is in progress: stop it first")
            return
        self._stop.clear()
        self.current = None
        settings = (self.strategy.value, self.pooling.value, self.config())
        self.start_button.disabled, self.stop_button.disabled = True, False
        # every line of a run's status is written by its thread: a comm message sent here, on the kernel's main
        # thread, can reach the page after the thread's first lines, and "starting" would follow "step 5"
        self._thread = threading.Thread(target=self._train, args=settings, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the run to end after its current step; its finished epochs are kept."""
        self._stop.set()
        self.status.value = "<i>stopping after this step…</i>"

    def wait(self, timeout: float | None = None) -> None:
        """Block until the run in progress has ended (for scripts and tests)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def clear(self) -> None:
        """Forget the finished runs (they stay in the cache)."""
        self.runs = []
        self._draw()

    # ------------------------------------------------------------------ the thread
    def _describe(self, strategy, pooling, cfg) -> str:
        lr = f"head lr {self.head_lr:g}" if strategy == "head" else f"lr {cfg.lr:g}"
        return f"{strategy}, {pooling} pooling, {lr}, {cfg.epochs} epoch(s)"

    def _train(self, strategy, pooling, cfg) -> None:
        self.status.value = f"<i>starting: {self._describe(strategy, pooling, cfg)}…</i>"
        try:
            model = self.make_model(pooling)
            # a run trained before under another name (the notebook's cells name theirs) is found by its key
            _, key = classifier_run_key(model, self.train, self.test, self.collate, strategy, cfg)
            name = name_filed_under(key) or (f"{pooling}-head-headlr{self.head_lr:g}" if strategy == "head"
                                             else f"{pooling}-{strategy}-lr{cfg.lr:g}")
            self.status.value = f"<i>training: {self._describe(strategy, pooling, cfg)}…</i>"
            run = train_classifier(model, self.train, self.test, self.collate, strategy, cfg, name=name,
                                   progress=False, callback=self._on_event, stop=self._stop)
            if run.epochs:  # a run stopped before its first epoch ended has nothing to compare
                self.runs = [r for r in self.runs if r.key != run.key] + [run]  # the same run once, the latest
            state = ("shipped with the course" if run.shipped else "from the cache" if run.cached
                     else ("stopped" if run.interrupted else "finished"))
            acc = run.final()
            final = (f"{state}: {self._describe(strategy, pooling, cfg)}"
                     + (f" → held-out accuracy {acc:.1%}" if acc is not None
                        else " before its first epoch ended: not added to the chart and table"))
        except Exception as err:  # shown in the widget, not lost in a thread
            final = error_html(f"{type(err).__name__}: {err}")
        finally:
            self.current = None
            self.start_button.disabled, self.stop_button.disabled = False, True
            self._draw()
        self.status.value = final  # last: whoever sees the final status sees the finished run's chart and table

    def _on_event(self, event: str, run) -> None:
        self.current = run
        now = self._clock()
        # at least as much training as drawing between two redraws: a slow redraw (a big chart on a busy machine)
        # must not happen after every step, which would make the run in the panel several times slower
        if event == "epoch" or now - self._last_draw >= max(self.redraw_seconds, self._draw_seconds):
            self._draw()
            if event == "step":
                done = len(run.step_losses) - len(run.epochs) * run.steps_per_epoch
                self.status.value = (f"<i>training {run.name}: epoch {len(run.epochs) + 1}/{run.config.epochs}, "
                                     f"step {done}/{run.steps_per_epoch}, loss {run.step_losses[-1]:.3f}</i>")

    def _draw(self) -> None:
        start = self._clock()
        shown = list(self.runs) + ([self.current] if self.current is not None else [])
        if shown:
            self.chart.value = figure_png(curves_figure(shown, baseline=self.baseline))
        else:  # the empty chart (axes, baseline) is drawn once: 'clear runs' answers at once
            if self._empty_chart is None:
                self._empty_chart = figure_png(curves_figure([], baseline=self.baseline))
            self.chart.value = self._empty_chart
        self.table.value = table_html(comparison_rows(self.runs))
        self._last_draw = self._clock()
        self._draw_seconds = self._last_draw - start

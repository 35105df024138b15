"""Every text box of every widget, fed awkward text (issue 25's widget guard): empty, white space, one to three
words, far more than 512 tokens, emoji with variation selectors, CJK, control and zero-width characters.

The contract: typing never raises, and afterwards the widget shows either a result for *this* text (its result
fields differ from what the previous, ordinary text showed) or an error message (⚠) with no stale result left
on screen beside it."""
from __future__ import annotations

import pytest
import torch

from course_lib import load_pretrained

LONG = " ".join(["the cat sat on the mat and looked at the dog"] * 60)  # ~660 words, over 512 tokens
FUZZ = {
    "empty": "",
    "white space": "  \t\n ",
    "one word": "Hello",
    "two words": "Hello world",
    "three words": "Hello world again",
    "over 512 tokens": LONG,
    "emoji with variation selectors": "I ❤️ New York ☕️ and 👍🏽 too",
    "CJK": "東京は日本の首都です。",
    "control characters": "a\x07b\x00c line\x0bbreak",
    "zero-width characters": "zero\u200bwidth\u200d joiner\ufeff here",
    "a lone variation selector": "\ufe0f",  # the tokenizer drops it: no word at all
    "a Mongolian variation selector between words": "Ulaanbaatar \u180b is",  # it stays with 'Ulaanbaatar'
}
ORDINARY = "Jane Villanueva flew to Chicago on Monday ."
# A widget that runs a model costs a second or more per text on 2 cores: the fast loop (`make check`, -m "not slow")
# feeds it these three, `make test` every text of FUZZ.
FAST = ("empty", "over 512 tokens", "a lone variation selector")


def texts(runs_a_model: bool) -> list:
    """The parameters of a fuzz test: every text, all but FAST marked slow where the widget runs a model."""
    return [pytest.param(n, marks=pytest.mark.slow if runs_a_model and n not in FAST else ()) for n in FUZZ]


def results(w, fields) -> tuple:
    """What the result fields show (HTML, or an image's bytes); a hidden field shows nothing."""
    out = []
    for f in fields:
        v = getattr(w, f)
        shown = v.value if v.layout.display != "none" else ""
        out.append(bytes(shown).decode("utf-8", "replace") if isinstance(shown, (bytes, memoryview)) else shown)
    return tuple(out)


def check_contract(w, box: str, fields: list[str], text: str, name: str, ordinary: str = ORDINARY) -> None:
    getattr(w, box).value = ordinary
    assert "⚠" not in w.message.value, f"the ordinary text is refused: {w.message.value}"
    before = results(w, fields)
    getattr(w, box).value = text  # must not raise
    after = results(w, fields)
    if "⚠" in w.message.value:
        assert not any(v.strip() for v in after), f"{name}: an error message beside a stale result {after}"
    else:
        assert after != before, f"{name}: no message, and the result is still the previous text's"
        assert any(v.strip() for v in after), f"{name}: no message and no result"


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained(device="cpu")


@pytest.fixture(scope="module")
def uniform(minilm):
    _, tok = minilm
    return torch.full((tok.vocab_size,), 1.0 / tok.vocab_size)


@pytest.mark.parametrize("name", texts(runs_a_model=False))
def test_mask_sampler(name, minilm, uniform):
    from course_lib.widgets.masking import MaskSampler

    w = MaskSampler(minilm[1], uniform)
    check_contract(w, "text", ["tokens"], FUZZ[name], name)


@pytest.mark.parametrize("name", texts(runs_a_model=False))
def test_span_mask_sampler(name, minilm, uniform):
    from course_lib.widgets.spans import SpanMaskSampler

    w = SpanMaskSampler(minilm[1], uniform)
    check_contract(w, "text", ["tokens"], FUZZ[name], name)  # the length histogram does not depend on the text
    if name in ("one word", "two words", "three words"):
        assert "rounds to no span" in w.message.value, w.message.value
    if name == "over 512 tokens":  # advice a user of the widget can follow
        assert "shorten the text to at most 512 tokens" in w.message.value and "truncation" not in w.message.value


@pytest.mark.parametrize("seed", [-5, 2**31, 2**62, 2**70])
def test_span_mask_sampler_takes_any_seed_typed(seed, minilm, uniform):
    """A seed of 2**62 or more, then a change of p, raised an uncaught ValueError (the generator's seed overflowed).
    The box now keeps the seed in 0 … 2**31 - 1, and every redraw still shows spans and a histogram."""
    from course_lib.widgets.spans import MAX_SEED, SpanMaskSampler

    w = SpanMaskSampler(minilm[1], uniform)
    w.seed.value = seed  # must not raise
    assert 0 <= w.seed.value <= MAX_SEED
    w.p.value = 0.3  # redraws the histogram from the seed: must not raise
    w.more.click()
    w.resample.click()
    w.max_len.value = 5
    assert "⚠" not in w.message.value + w.histogram.value and "span-unit" in w.tokens.value
    assert sum(w.counts) == 1000 and len(w.counts) == 5  # the new bound's first 1,000 lengths


@pytest.mark.parametrize("name", texts(runs_a_model=True))
def test_fill_mask_explorer(name):
    from course_lib.widgets.masking import FillMaskExplorer

    model, tok = _course_bert()
    w = FillMaskExplorer(model, tok, top_k=3)
    for text in (FUZZ[name], FUZZ[name] + " [MASK] ."):
        check_contract(w, "text", ["chart"], text, name, ordinary="Jane flew to [MASK] on Monday .")


@pytest.mark.parametrize("name", texts(runs_a_model=True))
def test_attention_explorer(name, minilm):
    from course_lib.widgets.attention import AttentionExplorer

    w = AttentionExplorer(*minilm)
    check_contract(w, "text", _fields(w, exclude={"text", "message"}), FUZZ[name], name)


@pytest.mark.parametrize("name", texts(runs_a_model=True))
def test_span_enumerator(name, minilm):
    from course_lib.spans.experiments import SpanNERModel, span_scorer
    from course_lib.spans.ner import GUM_TYPES, SpanLabels
    from course_lib.widgets.spans import SpanEnumerator

    torch.manual_seed(0)
    model = SpanNERModel(minilm[0], SpanLabels(GUM_TYPES))
    w = SpanEnumerator(span_scorer(model, minilm[1], max_len=10))
    check_contract(w, "text", ["counts", "brackets", "table"], FUZZ[name], name)
    if name == "over 512 tokens":  # advice a user of the widget can follow
        assert "type a shorter sentence" in w.message.value and "truncation" not in w.message.value
    if name in ("emoji with variation selectors", "zero-width characters", "control characters",
                "a Mongolian variation selector between words"):
        assert "⚠" not in w.message.value, w.message.value  # the invisible characters stay with their word


@pytest.mark.parametrize("name", texts(runs_a_model=True))
def test_alignment_viewer(name, minilm):
    from course_lib.spans.experiments import build_bio_tagger
    from course_lib.widgets.labelling import AlignmentViewer

    w = AlignmentViewer(build_bio_tagger(minilm[0], minilm[1]), gold="")
    check_contract(w, "text", ["words", "table"], FUZZ[name], name)
    if name == "over 512 tokens":
        assert "the first 126 of 660 words are tagged" in w.message.value, w.message.value
    elif "tagged" in w.message.value:  # a truncation note only where the text was cut
        raise AssertionError(f"{name}: {w.message.value}")
    if name == "a lone variation selector":
        assert "type a sentence" in w.message.value, w.message.value
    if name in ("a Mongolian variation selector between words", "emoji with variation selectors",
                "zero-width characters", "control characters"):
        assert "⚠" not in w.message.value, w.message.value  # as the span widgets: it stays with its word


@pytest.mark.parametrize("name", texts(runs_a_model=True))
def test_qa_span_viewer(name):
    from course_lib.finetuning.qa_reader import QAReader
    from course_lib.widgets.labelling import QASpanViewer

    w = QASpanViewer(_reader())
    context = "Jane Villanueva flew to Chicago on Monday. She met the board of United Airlines there."
    w.context.value = context
    check_contract(w, "question", ["answer", "strips"], FUZZ[name], name, ordinary="Where did Jane fly?")
    if name == "over 512 tokens":
        assert "the question has 660 tokens: the reader reads its first 64" in w.answer.value
    w.question.value = "Where did Jane fly?"
    check_contract(w, "context", ["answer", "strips"], FUZZ[name], name, ordinary=context)
    assert QAReader  # the shipped reader, loaded once


@pytest.mark.parametrize("name", texts(runs_a_model=False))
def test_subword_explorer(name):
    from course_lib.widgets.tokenization import SubwordExplorer

    w = SubwordExplorer(_small_tokenizers(), text="Mt. Sanitas is in Sunshine Canyon.")
    check_contract(w, "text", ["rows"], FUZZ[name], name)


# ----------------------------------------------------------------------------- shared, loaded once

_CACHE: dict = {}


def _course_bert():
    if "course-bert" not in _CACHE:
        _CACHE["course-bert"] = load_pretrained("course-bert", device="cpu")
    return _CACHE["course-bert"]


def _reader():
    from course_lib.finetuning.qa_reader import QAReader

    if "reader" not in _CACHE:
        _CACHE["reader"] = QAReader.shipped()
    return _CACHE["reader"]


def _small_tokenizers():
    if "small" not in _CACHE:
        from course_lib.checkpoints import embedded_model_dir
        from course_lib.tokenization import corpora
        from course_lib.tokenization.bpe import learn_bpe
        from course_lib.tokenization.byte_level import learn_byte_bpe
        from course_lib.tokenization.compare import CourseTokenizers
        from course_lib.tokenization.unigram_training import train_unigram
        from course_lib.tokenization.wordpiece import WordPiece

        texts = corpora.lee("test")
        _CACHE["small"] = CourseTokenizers(
            bpe=learn_bpe(corpora.word_counts(texts), 150), byte_bpe=learn_byte_bpe(texts, 150),
            unigram=train_unigram(corpora.word_counts(texts, split=str.split), 300),
            wordpiece=WordPiece.from_tokenizer_json(embedded_model_dir() / "tokenizer.json"))
    return _CACHE["small"]


def _fields(w, exclude: set[str]) -> list[str]:
    """The widget's HTML output fields (its result), by attribute name."""
    import ipywidgets as W

    return [k for k, v in vars(w).items() if isinstance(v, W.HTML) and k not in exclude]


@pytest.fixture(scope="module")
def senses(minilm):
    from course_lib.embeddings import load_sense_data, target_states

    model, tok = minilm
    data = load_sense_data(lemmas=["bank", "mouse"])
    return data, {"mean": target_states(model, tok, data.examples)}


@pytest.mark.parametrize("name", texts(runs_a_model=True))
def test_nearest_sense_explorer(name, minilm, senses):
    from course_lib.widgets import NearestSenseExplorer

    data, states = senses
    w = NearestSenseExplorer(*minilm, data, states=states, sentence="The bank raised its rates.", word="bank")
    for text in (FUZZ[name], FUZZ[name] + " by the river bank"):  # without and with a word it has senses for
        check_contract(w, "sentence", ["chart", "neighbours"], text, name,
                       ordinary="I plugged a new wireless mouse into my laptop.")

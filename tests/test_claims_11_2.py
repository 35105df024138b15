"""Every number and direction the prose of notebook 11.2 states, read from the executed notebook.

Each claim cell of notebooks/11_2_masked_language_modeling.py carries a marker ``# claim: <name>``; the tests
below read that cell's printed output and assert what the prose around it says, so a change of model, recipe
or code that breaks a sentence of the notebook fails here. Claims that need no notebook run (BERT-base's
parameter count, the recipe the prose describes) are recomputed directly and are not marked slow.
"""
import json
import math
import re
from pathlib import Path

import pytest

from conftest import ROOT
from notebook_runs import claims_in, executed_ok, number, output, prose

NOTEBOOK = ROOT / "notebooks" / "11_2_masked_language_modeling.py"
FREQUENT = {'"', "the", "a", ".", ",", "is", "of", "*", "-", "_", "to", "and", "in"}  # the corpus's most frequent


@pytest.fixture(scope="module")
def run():
    return executed_ok(NOTEBOOK)


def by_model(text: str) -> dict[str, str]:
    """The output of a cell that prints ``--- <model>`` before each model's lines: model -> its lines."""
    parts = re.split(r"^--- (\S+)\n", text.strip(), flags=re.M)
    assert parts[0] == "" and len(parts) >= 3, text
    return dict(zip(parts[1::2], parts[2::2]))


def cloze_rows(text: str) -> dict[tuple[str, int], dict]:
    """(sentence, [MASK] number) -> {"top": [(token, p), ...], "rank": int | None, "p": float | None}."""
    rows = {}
    for line in text.strip().splitlines():
        m = re.match(r"(.*?)  \[MASK\] #(\d+): (.*?)(?:  \| '(\w+)': rank ([\d,]+), p = ([\d.]+))?$", line)
        assert m, f"unexpected cloze line {line!r}"
        top = [(t, float(x)) for t, x in re.findall(r"(\S+) (\d\.\d+)(?:, |$)", m.group(3))]  # tokens may be ","
        assert len(top) == 5, m.group(3)
        rank = int(m.group(5).replace(",", "")) if m.group(5) else None
        rows[(m.group(1), int(m.group(2)))] = {"top": top, "word": m.group(4), "rank": rank,
                                               "p": float(m.group(6)) if m.group(6) else None}
    return rows


def test_every_claim_cell_has_a_test():
    here = Path(__file__).read_text()
    for name in claims_in(NOTEBOOK):
        assert f'"{name}"' in here, f"claim cell {name!r} has no test"


# ----------------------------------------------------------------------------- §1 the cloze task

@pytest.mark.slow
def test_the_model_was_trained_as_the_prose_says(run):
    text = output(run, "model")
    m = re.search(r"trained ([\d,]+) steps of (\d+) x (\d+) tokens \((\d+) M tokens\) in ([\d.]+) min on .*(GPU|H100|H200)", text)
    assert m, text
    assert (m.group(1), m.group(2), m.group(3), m.group(4)) == ("12,000", "256", "128", "393"), m.groups()
    assert 6.5 <= float(m.group(5)) < 7.5, "seven minutes on one GPU"
    assert re.search(r"for 12,000\s+steps of 256 sequences of 128 tokens \(about 390 M tokens; seven minutes on\s+one "
                     r"GPU\)", prose(run))
    data = json.loads((ROOT / "course_lib" / "data" / "models" / "course-bert" / "metrics.json").read_text())["data"]
    n, words = len(data["sources"]), data["train_words"]
    assert f"on {words / 1e6:.0f} M words of\nbroad English from {n} sources" in prose(run)
    assert f"(never trained on; from\nall {n} sources)" in prose(run), "the held-out pieces span every source"


def cloze_by_model(run) -> dict[str, dict]:
    models = {name: cloze_rows(text) for name, text in by_model(output(run, "cloze")).items()}
    assert list(models) == ["course-bert", "minilm-wordnet-mlm"], list(models)
    return models


@pytest.mark.slow
def test_cloze_course_bert_puts_my_then_your_the_other_model_the(run):
    models = cloze_by_model(run)
    cb, other = (m[("Please turn [MASK] homework in.", 1)] for m in models.values())
    assert [t for t, _ in cb["top"][:3]] == ["my", "your", "the"], cb      # *my*, the chapter's *your*, then *the*
    assert cb["word"] == "your" and cb["rank"] == 2 and 0.35 <= cb["p"] < 0.4, "second, almost 40%"
    assert 0.45 <= cb["top"][0][1] < 0.55 and 0.85 <= cb["top"][0][1] + cb["p"] < 0.9, "about half; nine tenths"
    assert other["top"][0][0] == "the" and other["rank"] == 16, "minilm-wordnet-mlm: *the* first, *your* 16th"


@pytest.mark.slow
def test_cloze_homework_gap_particles_against_topic_words(run):
    models = cloze_by_model(run)
    cb = models["course-bert"][("Please turn your homework [MASK].", 1)]
    other = models["minilm-wordnet-mlm"][("Please turn your homework [MASK].", 1)]
    assert [t for t, _ in cb["top"]] == ["off", "on", "up", "down", "out"], cb  # particles
    assert cb["rank"] == 9, "*in* is 9th"
    assert {"school", "homework"} <= {t for t, _ in other["top"]}, other
    assert cb["rank"] > 5 and other["rank"] > 5, "neither puts *in* in its first five"


@pytest.mark.slow
def test_cloze_fig_11_4_comma_and_long_for_one_model_fish_for_the_other(run):
    models = cloze_by_model(run)
    for text, long_rank in (("So [MASK] and [MASK] for all apricot fish.", 9), ("So [MASK] and [MASK] for all the fish.", 3)):
        cb1 = models["course-bert"][(text, 1)]
        assert cb1["top"][0][0] == "," and cb1["rank"] == long_rank, f"comma first, *long* {long_rank}: {cb1}"
        for i in (1, 2):
            assert models["minilm-wordnet-mlm"][(text, i)]["top"][0][0] == "fish", text
        cb2, other2 = models["course-bert"][(text, 2)], models["minilm-wordnet-mlm"][(text, 2)]
        assert cb2["word"] == "thanks" and cb2["rank"] in (14, 28) and other2["rank"] > 3000, (cb2, other2)
    ranks = {text: models["course-bert"][(text, 2)]["rank"] for text in ("So [MASK] and [MASK] for all apricot fish.",
                                                                       "So [MASK] and [MASK] for all the fish.")}
    assert sorted(ranks.values()) == [14, 28], ranks    # "course-bert: 14th and 28th"
    assert "costs the right answer six places" in prose(run)  # *long*: 3rd, 9th


def everyday_of(run) -> dict[str, dict]:
    out = {}
    for name, text in by_model(output(run, "everyday")).items():
        m = re.search(r"(\d+) everyday sentences: an acceptable word first in (\d+)%, in the top 5 in (\d+)%", text)
        assert m, text
        rows = re.findall(r"^  (.+?\[MASK\].*?) \| (.+?) \| (ok|--)$", text, flags=re.M)
        t = re.search(r"held-out test set: (\d+) everyday sentences: an acceptable word first in (\d+)%, in the top 5 "
                      r"in (\d+)%", text)
        assert t, text
        out[name] = {"n": int(m.group(1)), "top1": int(m.group(2)), "top5": int(m.group(3)), "rows": rows,
                     "test": tuple(int(g) for g in t.groups())}
    assert list(out) == ["course-bert", "minilm-wordnet-mlm"]
    return out


@pytest.mark.slow
def test_everyday_sentences_two_thirds_against_a_quarter_and_two_ways_to_fail(run):
    ev = everyday_of(run)
    cb, other = ev["course-bert"], ev["minilm-wordnet-mlm"]
    assert cb["n"] == other["n"] == 165
    assert (cb["top5"], cb["top1"]) == (66, 31) and (other["top5"], other["top1"]) == (27, 5)
    assert 65 <= cb["top5"] < 68 and 25 <= other["top5"] < 30, "two in three / about a quarter"
    # the dev set chose course-bert's recipe: the held-out test set is the fair number, and it is lower
    assert cb["test"] == (60, 30, 57) and other["test"] == (60, 8, 30) and cb["test"][2] < cb["top5"]
    assert re.search(r"on the 60 held-out test sentences, scored once to report, it gets\s+57% and 30% "
                     r"\(minilm-wordnet-mlm 30% and 8%; 60 sentences are few, a standard error of about 6 points\)",
                     prose(run))
    n, top5 = cb["test"][0], cb["test"][2] / 100
    assert round(100 * (top5 * (1 - top5) / n) ** 0.5) == 6  # "a standard error of about 6 points"

    def row(model, start):
        return next(r for r in ev[model]["rows"] if r[0].startswith(start))[1].split(", ")

    assert "baby" in row("minilm-wordnet-mlm", "The baby is") and "baby" not in row("course-bert", "The baby is")
    assert "dinner" in row("minilm-wordnet-mlm", "My mom is cooking") and "dinner" not in row("course-bert", "My mom")
    assert {"beach", "moon"} <= set(row("course-bert", "We watched a movie")), "a word that fits the slot"
    assert {"placed", "buried"} <= set(row("course-bert", "The baby is"))
    mom = row("course-bert", "My mom is cooking")
    assert mom.index("morning") < mom.index("kitchen") and mom.index("afternoon") < mom.index("kitchen"), mom
    assert re.search(r"\*afternoon\* for the cooking, \*internet\* for the movie or \*still\*\s+and \*sitting\* for the baby, "
                     r"still counts as a miss", prose(run))
    assert {"internet"} <= set(row("course-bert", "We watched a movie")) and {"still", "sitting"} <= set(
        row("course-bert", "The baby is"))


@pytest.mark.slow
def test_course_bert_copies_a_word_of_the_sentence_far_less_often_but_it_does(run):
    copied = [(int(a), int(b)) for a, b in re.findall(r"first guess a word the sentence already holds: (\d+) of (\d+)",
                                                        output(run, "everyday"))]
    assert len(copied) == 2, output(run, "everyday")
    (cb, n), (other, n2) = copied  # course-bert first, then minilm-wordnet-mlm
    assert n == n2 == 165
    assert 0.45 <= other / n <= 0.58 and 0.13 <= cb / n <= 0.2, "about half / about one in six"
    text = " ".join(prose(run).split())
    assert "for about half of the sentences" in text and "course-bert's for about one in six" in text
    room = next(r for r in everyday_of(run)["course-bert"]["rows"] if r[0].startswith("Please close the"))
    assert room[1].split(", ")[:2] == ["room", "door"], room  # "*room* first ..., *door* second"
    mom = next(r for r in everyday_of(run)["course-bert"]["rows"] if r[0].startswith("My mom is cooking"))
    assert mom[1].split(", ").index("kitchen") == 2 and mom[2] == "ok", mom  # "*kitchen*, which is third"


@pytest.mark.slow
def test_bert_base_saw_about_110_times_as_many_tokens(run):
    m = re.search(r"BERT-base trained on ([\d.]+) B token positions, (\d+) times course-bert's (\d+) M",
                  output(run, "everyday"))
    assert m, output(run, "everyday")
    assert (m.group(1), m.group(3)) == ("42.6", "393") and 105 <= int(m.group(2)) <= 115, m.groups()
    assert "about 110 times as many tokens" in prose(run) and "400 times" not in prose(run)


@pytest.mark.slow
def test_model_beats_the_unigram_baseline_mostly_on_frequent_tokens(run):
    text = output(run, "heldout-accuracy")
    top1, base1 = number(r"top-1 ([\d.]+)%", text), number(r"unigram baseline ([\d.]+)%", text)
    top5, base5 = number(r"top-5 ([\d.]+)%", text), number(r"\(baseline ([\d.]+)%\)", text)
    assert 8.5 <= top1 / base1 < 9 and 2.8 <= top5 / base5 <= 3.2, "almost nine times the top-1, three times the top-5"
    freq = number(r"most frequent tokens \([\d,]+ of the masked\): top-1 ([\d.]+)%", text)
    other = number(r"all other tokens \([\d,]+\): top-1 ([\d.]+)%", text)
    assert 64 <= freq < 69 and 23 <= other < 28, "about two thirds / about one in four"


# ----------------------------------------------------------------------------- §2 the MLM head

@pytest.mark.slow
def test_the_output_matrix_is_the_embedding_matrix(run):
    text = output(run, "tied")
    assert "the output matrix is the embedding matrix: True | same memory: True" in text


@pytest.mark.slow
def test_the_head_by_hand_gives_the_models_logits(run):
    assert "equal to the model's logits: True" in output(run, "head-by-hand")


def test_bert_base_pretraining_count_and_where_it_is():
    """Recomputed: the prose's 110.1M, three quarters in the blocks, a fifth in the embeddings, 0.6M head, 23.4M."""
    from course_lib.model.bert import BertConfig
    from course_lib.model.heads import pretraining_parameter_breakdown

    parts = pretraining_parameter_breakdown(BertConfig())
    total = sum(parts.values())
    assert round(total / 1e6, 1) == 110.1 and round(total / 1e8) == 1  # "110M" and "about 100M"
    assert parts["transformer blocks"] / total > 0.75
    assert 0.19 < parts["embeddings (word, position, segment, LayerNorm)"] / total < 0.25
    assert round(parts["MLM head: transform (dense + LayerNorm)"] / 1e6, 1) == 0.6
    assert parts["MLM head: output matrix (tied: the word embeddings)"] == 0
    assert round(30522 * 768 / 1e6, 1) == 23.4


@pytest.mark.slow
def test_the_notebook_prints_the_same_count(run):
    text = output(run, "bert-base-count")
    assert number(r"total\s+([\d.]+)M", text) == 110.11
    # "109.5M without the two pretraining heads": both round to 110M
    assert number(r"without the pretraining heads \(encoder and pooler\)\s+([\d.]+)M", text) == 109.48
    assert number(r"an untied output matrix would add\s+([\d.]+)M", text) == 23.44


# ----------------------------------------------------------------------------- §3 why 80/10/10

def fate_stats(text: str) -> dict[str, dict[str, float]]:
    stats = {}
    for line in text.strip().splitlines():
        m = re.match(r"(.+?)\s+([\d,]+) positions: top-1 = original\s+([\d.]+)%, mean P\(original\) ([\d.]+), "
                     r"top-1 = the token shown\s+([\d.]+)%", line)
        assert m, line
        stats[m.group(1).strip()] = {"n": int(m.group(2).replace(",", "")), "original": float(m.group(3)) / 100,
                                     "p": float(m.group(4)), "shown": float(m.group(5)) / 100}
    return stats


def fates_of(run, model: str) -> dict[str, dict[str, float]]:
    return fate_stats(by_model(output(run, "fates"))[model])


@pytest.mark.slow
def test_where_it_sees_a_real_token_it_predicts_that_token_nine_times_in_ten(run):
    stats = fates_of(run, "minilm-wordnet-mlm")
    for fate in ("unchanged", "not selected"):
        assert 0.83 <= stats[fate]["shown"] <= 0.95, f"{fate}: {stats[fate]}"


@pytest.mark.slow
def test_course_bert_copies_a_seen_token_97_or_98_times_in_100(run):
    stats, other = fates_of(run, "course-bert"), fates_of(run, "minilm-wordnet-mlm")
    for fate in ("unchanged", "not selected"):
        assert 0.965 <= stats[fate]["shown"] < 0.985, f"97 or 98 times in 100: {fate}: {stats[fate]}"
        assert stats[fate]["shown"] > other[fate]["shown"], "more firmly than minilm-wordnet-mlm"
    rnd = stats["random token"]
    assert 0.15 <= rnd["shown"] <= 0.18 and 0.34 <= rnd["original"] <= 0.4, f"one in six / over a third: {rnd}"
    assert rnd["shown"] < other["random token"]["shown"], "trusts the context more at random tokens"
    assert stats["[MASK]"]["original"] > 0.4 and 0.2 <= other["[MASK]"]["original"] <= 0.3, "four in ten / a quarter"


@pytest.mark.slow
def test_at_random_tokens_it_copies_four_times_in_ten_and_recovers_one_in_five(run):
    stats = fates_of(run, "minilm-wordnet-mlm")
    rnd = stats["random token"]
    assert 0.33 <= rnd["shown"] <= 0.5, f"about four cases in ten: {rnd}"
    assert 0.14 <= rnd["original"] <= 0.25, f"about one in five: {rnd}"
    assert rnd["shown"] > rnd["original"]
    assert 0.2 <= stats["[MASK]"]["original"] <= 0.3, "at [MASK] it gets about a quarter right"


@pytest.mark.slow
def test_a_piece_beside_its_sister_pieces_is_five_times_easier_than_its_whole_word(run):
    """"With the word's other pieces in view, course-bert recovers the masked piece about half the time; with the
    whole word masked, in fewer than one case in ten" -- so the prediction's answer is "five times as often or
    more". The whole-word corruption shown above it masks every piece of a word it selects."""
    from course_lib.exercises import EXERCISES

    text = output(run, "whole-word")
    top1 = {c: float(x) / 100 for c, x in re.findall(r"^(piece alone|whole word)\s+[\d,]+ pieces: top-1 = the original "
                                                       r"piece\s+([\d.]+)%", text, re.M)}
    n = {c: int(x.replace(",", "")) for c, x in re.findall(r"^(piece alone|whole word)\s+([\d,]+) pieces", text, re.M)}
    assert n["piece alone"] == n["whole word"] >= 500  # the same pieces, asked twice
    assert 0.4 <= top1["piece alone"] <= 0.6  # "about half the time"
    assert top1["whole word"] < 0.1  # "in fewer than one case in ten"
    ratio = number(r"whole word masked: ([\d.]+)x", text)
    assert ratio >= 5 and EXERCISES["piece_given_away"].answer == "five times as often or more"
    assert "course-bert recovers the masked piece about half the time; with the whole word masked, in fewer than " \
        "one case in ten" in " ".join(prose(run).split())

# ----------------------------------------------------------------------------- §4 the loss

@pytest.mark.slow
def test_fifteen_percent_of_the_text_is_in_the_loss_twelve_percent_masked(run):
    text = output(run, "share-in-loss")
    assert 14.0 <= number(r"in the loss \(selected\): ([\d.]+)%", text) <= 16.0
    assert 11.0 <= number(r"\[MASK\] in the input: ([\d.]+)%", text) <= 13.0


# ----------------------------------------------------------------------------- §5/§6 pretraining

def test_the_recipe_is_what_the_prose_describes():
    from course_lib.pretraining.training import PretrainingRecipe

    r = PretrainingRecipe()
    assert (r.num_hidden_layers, r.hidden_size, r.num_attention_heads, r.vocab_size) == (2, 64, 4, 1000)
    assert (r.max_length, r.batch_size, r.dropout, r.held_out_every) == (32, 32, 0.0, 10)
    assert r.warmup < r.steps // 10 and r.lr_at(r.steps) == 0.0


@pytest.mark.slow
def test_the_run_reports_its_time(run):
    text = output(run, "pretraining-run")
    assert number(r"training took (\d+) s", text) > 0
    assert re.search(r"\((shipped with the course|loaded from the cache|just now), ", text)


def pretraining_numbers(run):
    text = output(run, "pretraining-numbers")
    return {
        "ln_v": number(r"ln\|V\| = ([\d.]+)", text),
        "entropy": number(r"unigram entropy of the training text = ([\d.]+)", text),
        "held_unigram": number(r"unigram guess on the held-out text = ([\d.]+)", text),
        "start": number(r"MLM loss at step 0: ([\d.]+)", text),
        "train_end": number(r"training pairs ([\d.]+), held-out", text),
        "held_end": number(r"held-out ([\d.]+); held-out top-1", text),
        "nsp_acc_held": number(r"NSP accuracy at step \d+: held-out pairs ([\d.]+)%", text) / 100,
        "nsp_loss_end": number(r"NSP loss \(mean of the last 100 steps\) ([\d.]+)", text),
    }


@pytest.mark.slow
def test_mlm_loss_starts_at_ln_v_and_ends_far_below_the_unigram_lines(run):
    n = pretraining_numbers(run)
    assert n["start"] == pytest.approx(n["ln_v"], abs=0.1)
    assert n["train_end"] < n["entropy"] - 1.5, "far below the unigram entropy"
    assert n["held_end"] < n["held_unigram"] - 1.0, "on held-out text as well"
    assert n["held_unigram"] > n["entropy"], "the unigram guess does worse on held-out text"
    assert 1.2 <= n["held_end"] - n["train_end"] <= 1.8, "held-out about a nat and a half above training"


@pytest.mark.slow
def test_part_of_the_generalisation_gap_is_harder_text_and_held_out_loss_still_falls(run):
    n, text = pretraining_numbers(run), output(run, "pretraining-numbers")
    m = re.search(r"held-out MLM loss at its lowest at step (\d+) \(([\d.]+)\); the gap to the training pairs at the "
                  r"end: ([\d.]+) nats, the unigram guess's own gap ([\d.]+)", text)
    assert m, text
    lowest_step, gap, unigram_gap = int(m.group(1)), float(m.group(3)), float(m.group(4))
    assert lowest_step == number(r"MLM loss at step (\d+): training pairs", text), "lowest at the last evaluation"
    assert gap == pytest.approx(n["held_end"] - n["train_end"], abs=0.011)
    assert unigram_gap == pytest.approx(n["held_unigram"] - n["entropy"], abs=0.011)
    # "part of it is harder text": the unigram guess's own gap is a sizeable part of the model's (the two need not
    # add up, so the prose no longer calls it half)
    assert round(unigram_gap, 2) == 0.76 and 0.3 <= unigram_gap / gap < 1
    assert "0.76 nats worse" in prose(run) and "**overfitting**" not in prose(run)
    assert "part of it is harder text, not memorisation" in " ".join(prose(run).replace("#", "").split())


@pytest.mark.slow
def test_the_loss_plateaus_near_the_unigram_entropy_before_falling(run):
    text = output(run, "pretraining-numbers")
    first = number(r"within half a nat of the unigram entropy: from step (\d+)", text)
    last = number(r"within half a nat of the unigram entropy: from step \d+ to step (\d+)", text)
    assert first <= 450, "the loss reaches the unigram entropy within a few hundred steps"
    assert last - first >= 300, "and stays near that line for several hundred steps"
    running = number(r"the running training loss at step (\d+)", text)
    cloze = number(r"the cloze loss at step (\d+)", text)
    assert running < cloze, "the running training loss (with its copyable unchanged tokens) leaves the line earlier"


@pytest.mark.slow
def test_nsp_sits_at_ln2_then_learns_a_little(run):
    text = output(run, "pretraining-numbers")
    assert number(r"NSP loss, mean of steps 1-600: ([\d.]+)", text) == pytest.approx(math.log(2), abs=0.01)
    n = pretraining_numbers(run)
    assert n["nsp_loss_end"] < math.log(2) - 0.15 and n["nsp_acc_held"] > 0.55, "then falls, above chance"
    assert 0.58 <= n["nsp_acc_held"] <= 0.75, "about two pairs in three"
    text = output(run, "pretraining-numbers")
    assert number(r"training pairs ([\d.]+)%; NSP loss", text) / 100 > n["nsp_acc_held"], "better on its own pairs"


@pytest.mark.slow
def test_probe_goes_from_a_frequent_token_to_a_plausible_word(run):
    text = output(run, "probes")
    table = [line for line in text.splitlines() if line.startswith("step")]
    steps = [int(line.split(":")[0].split()[1]) for line in table]
    first_probe = [line.split(":", 1)[1].split("|")[0].strip() for line in table]
    early = [t for s, t in zip(steps, first_probe) if 0 < s <= 1050]
    assert sum(t in FREQUENT for t in early) > len(early) / 2, f"early on, mostly a frequent token: {early}"
    assert first_probe[-1] in {"if", "while", "for", "with", "try", "elif"}, first_probe
    said = re.findall(r"-> \[(.*?)\]; .* is (not )?in the training text", text)
    assert len(said) == 3
    assert said[0][1] == "" and said[1][1] == "not " and said[2][1] == "not ", "which probes the model has read"
    for top3, _ in said[1:]:
        assert top3.split(", ")[0].strip("'") not in FREQUENT


@pytest.mark.slow
def test_nsp_reads_the_pooler_not_the_raw_cls_vector(run):
    text = output(run, "pooler")
    assert "NSP scores from the pooler: True" in text
    assert "NSP scores from the raw z_CLS instead: False" in text


# ----------------------------------------------------------------------------- §7 domain adaptation

@pytest.mark.slow
def test_adaptation_lowers_in_domain_loss_and_costs_a_little_on_general_text(run):
    text = output(run, "adaptation")
    dom = re.search(r"in-domain \(held-out Python manual\)\s+held-out cloze loss ([\d.]+) -> ([\d.]+)", text)
    gen = re.search(r"general English \(course-bert's held-out text\)\s+held-out cloze loss ([\d.]+) -> ([\d.]+)", text)
    assert dom and gen, text
    assert re.search(r"parameters for 60 steps in", text), "60 steps of training on the top layers"
    assert "60 steps of training on the top layers" in " ".join(prose(run).split())
    assert 0.25 <= float(dom.group(1)) - float(dom.group(2)) < 0.3, "almost 0.3 nats"
    assert 0.05 <= float(gen.group(2)) - float(gen.group(1)) <= 0.15, "general English: about a tenth of a nat worse"
    m = re.search(r"mean of the first 10 steps ([\d.]+), of the last 10 ([\d.]+)", text)
    assert m, text
    first, last = float(m.group(1)), float(m.group(2))
    assert 0 < first - last < 0.4, "the mean of ten steps falls only a little"
    assert last < float(dom.group(2)), "the training loss sits below the held-out loss after"


@pytest.mark.slow
def test_adaptation_moves_five_domain_words_up_none_to_first_and_one_first_choice_changes(run):
    text = output(run, "adaptation-probes")
    found = re.findall(r"before: (\S+) .*?'(\w+)': rank ([\d,]+), p = [\d.]+\n\s+after:\s+(\S+) .*?'\w+': rank ([\d,]+)",
                       text)
    assert len(found) == 6, text
    ranks = {w: (int(b.replace(",", "")), int(a.replace(",", ""))) for _, w, b, _, a in found}
    climbed = [w for w, (b, a) in ranks.items() if a < b]
    assert sorted(climbed) == ["def", "exception", "for", "import", "return"], f"five climb: {ranks}"
    assert ranks["if"][1] > ranks["if"][0], "*if* slips"
    assert (ranks["exception"], ranks["return"]) == ((208, 26), (255, 31)), ranks
    assert ranks["def"][1] >= 1000, ranks
    assert all(a > 1 for _, a in ranks.values()), "none becomes a first choice"
    changed = {(before, after) for before, _, _, after, _ in found if before != after}
    assert changed == {("conditional", "null")}, "one first choice changes, to another word"
    sentences = re.findall(r"^(\S.*)$", text, flags=re.M)
    copied = [before for (before, *_), sentence in zip(found, sentences) if before in re.findall(r"\w+", sentence)]
    assert sorted(copied) == ["conditional", "current", "loop"], copied

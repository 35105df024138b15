"""The library's own implementations of what each exercise asks the student to write.

A submission whose graded cells use one of these for that exercise gets no credit -- see ``grading.reference_used``.
For every function exercise registered by the ``ch*`` modules: the reference its check compares with, the
check module's own helper that computes the expected answer, and any public equivalent in ``course_lib``.

Names are given where they are defined; a re-export (``course_lib.causal_mask``, ``course_lib.spans.sbo_input``)
is the same object, and ``reference_used`` compares objects. A listed class also catches its use through an
instance (``WordPiece(vocab).encode_word(word)``); a listed method only where it is named through its class.
Left out: helpers a student may use (tokenizers and models handed to the function, ``torch``, the cosine), what
the notebook tells the student to call, and any library function whose name a solution cell of that exercise uses
(the student's own function of that name would otherwise be read as the library's). An empty tuple says why.
"""
from __future__ import annotations

import ast
import re

from .grading import Cell, python_only


REFERENCES: dict[str, tuple[str, ...]] = {
    # ----------------------------------------------------------------------------- ch11_1: bidirectional encoders
    # additive_mask (the float mask) is left out: a step of the masking, not its answer
    "attention": ("course_lib.model.attention.attention", "course_lib.model.attention.masked_softmax",
                  "course_lib.model.attention.attention_scores"),
    "causal_mask": ("course_lib.model.attention.causal_mask",),
    # not causal_mask (the solution calls its own causal_mask) nor attention (the notebook lets the student reuse
    # scaled_dot_product_attention, of which it is the library's version); combine_masks is a plain `&`
    "self_attention": ("course_lib.model.attention.self_attention",),
    "heads": ("course_lib.model.attention.split_heads", "course_lib.model.attention.merge_heads"),
    # BertModel: "from the config alone" -- building the model and counting is the library's answer
    "param_count": ("course_lib.model.bert.parameter_count", "course_lib.model.bert.BertModel",
                    "course_lib.model.bert.BertModel.num_parameters", "course_lib.model.size.parameter_breakdown"),

    # ----------------------------------------------------------------------------- ch11_1b: subword tokenization
    # BertTokenizer is the embedded model's tokenizer, the very thing graded: no legitimate use inside these two
    "wordpiece_encode": ("course_lib.tokenization.wordpiece.WordPiece",
                         "course_lib.tokenization.wordpiece.WordPiece.encode_word",
                         "course_lib.tokenization.reference.embedded_wordpiece",
                         "course_lib.tokenization.bert_tokenizer.BertTokenizer",
                         "course_lib.exercises.ch11_1b._reference", "course_lib.exercises.ch11_1b._library_wordpiece"),
    "bpe_merge_step": ("course_lib.exercises.ch11_1b._reference_merge", "course_lib.tokenization.merges.PairCounts",
                       "course_lib.tokenization.merges.best_pairs", "course_lib.tokenization.bpe.pair_counts",
                       "course_lib.tokenization.bpe.learn_bpe"),
    "viterbi": ("course_lib.tokenization.unigram.Unigram", "course_lib.tokenization.unigram.Unigram.viterbi"),
    # not basic_tokenize: the notebook names it and the solution calls it
    "wordpiece_word_ids": ("course_lib.tokenization.wordpiece.WordPiece",
                           "course_lib.tokenization.wordpiece.WordPiece.encode",
                           "course_lib.tokenization.reference.embedded_wordpiece",
                           "course_lib.tokenization.bert_tokenizer.BertTokenizer",
                           "course_lib.exercises.ch11_1b._reference",
                           "course_lib.exercises.ch11_1b._library_wordpiece"),

    # ----------------------------------------------------------------------------- ch11_2: masked language modelling
    "mlm_masking": ("course_lib.pretraining.masking.mlm_mask", "course_lib.pretraining.masking.DynamicMasker",
                    "course_lib.pretraining.masking.StaticMasker"),
    "mlm_loss": ("course_lib.pretraining.masking.masked_lm_loss", "course_lib.exercises.ch11_2._selected_loss"),
    "nsp_input": ("course_lib.exercises.ch11_2._nsp_reference", "course_lib.pretraining.corpus.collate_pairs"),
    "language_sampling": ("course_lib.pretraining.multilingual.language_sampling_probs",),
    # none: no library function goes from texts to the loss; of its steps, mlm_mask is allowed by the notebook
    # ("your mask_tokens, or course_lib's mlm_mask") and masked_lm_loss is dropped because the solution calls its
    # own masked_lm_loss (the last step, ch11_2._selected_loss, is mlm_loss's answer, not this one's)
    "masked_batch": (),

    # ----------------------------------------------------------------------------- ch11_3: contextual embeddings
    "word_vector": ("course_lib.embeddings.layers.combine_layers",),
    "sense_centroids": ("course_lib.embeddings.wsd.sense_centroids",),
    # not cosine_matrix: a cosine, as legitimate as F.cosine_similarity; the work is choosing by it
    "nearest_sense": ("course_lib.embeddings.wsd.NearestSenseWSD", "course_lib.embeddings.wsd.NearestSenseWSD.scores",
                      "course_lib.embeddings.wsd.NearestSenseWSD.predict"),
    "wsd_predict": ("course_lib.embeddings.wsd.NearestSenseWSD", "course_lib.embeddings.wsd.NearestSenseWSD.fit",
                    "course_lib.embeddings.wsd.NearestSenseWSD.predict", "course_lib.embeddings.wsd.wsd_by_layer"),
    "z_score": ("course_lib.embeddings.geometry.ZScorer", "course_lib.embeddings.geometry.ZScorer.fit",
                "course_lib.embeddings.geometry.ZScorer.transform"),
    "anisotropy": ("course_lib.embeddings.geometry.anisotropy", "course_lib.embeddings.geometry.pair_cosines",
                   "course_lib.exercises.ch11_3.expected_cosine", "course_lib.exercises.ch11_3.pair_stats"),
    # the whole per-layer computation only: anisotropy and ZScorer are the library's versions of the student's own
    # anisotropy_estimate and z_score, which the solution reuses
    "anisotropy_by_layer": ("course_lib.embeddings.geometry.layer_geometry",
                            "course_lib.exercises.ch11_3._reference_by_layer"),

    # ----------------------------------------------------------------------------- ch11_4a: sentence classification
    # pool(how="cls") is only hidden[:, 0]: the work is the masked batch, the head and its loss; the library's
    # classifier is eq. 11.13 on an encoder, the whole answer (the encoder and tokenizer are handed in)
    "cls_head": ("course_lib.exercises.ch11_4a.cls_reference",
                 "course_lib.model.classification.BertForSequenceClassification",
                 "course_lib.finetuning.classify.classify_texts"),
    "freeze_last_k": ("course_lib.finetuning.freezing.freeze", "course_lib.finetuning.frozen.freeze_below"),
    "sbert_features": ("course_lib.finetuning.sbert.sbert_features",),
    # pool does the masked mean pooling, this exercise's own step; not sbert_features, which the notebook says to
    # reuse and the solution calls
    "bi_encoder_logits": ("course_lib.exercises.ch11_4a.bi_reference", "course_lib.model.classification.pool"),
    "distillation_loss": ("course_lib.finetuning.distill.distillation_loss", "course_lib.finetuning.distill.Student",
                          "course_lib.exercises.ch11_4a.reference_distillation"),

    # ----------------------------------------------------------------------------- ch11_4b: sequence labelling
    "align_labels": ("course_lib.finetuning.labelling.align_labels",),
    "decode_first_subword": ("course_lib.finetuning.labelling.decode_first_subword",
                             "course_lib.finetuning.labelling.first_subword_positions"),
    # get_entities is read_entities, written in the same cell; the Scores classes do P/R/F1 from the counts
    "entity_f1": ("course_lib.finetuning.ner_eval.entity_scores", "course_lib.finetuning.ner_eval.get_entities",
                  "course_lib.finetuning.ner_eval.Scores", "course_lib.spans.ner.span_scores",
                  "course_lib.spans.ner.Scores"),
    "best_span": ("course_lib.finetuning.qa.best_span",),
    # not decode_first_subword (the solution calls its own) nor get_entities (the library's read_entities, which
    # the notebook says to reuse)
    "predicted_entities": ("course_lib.exercises.ch11_4b._entities",),

    # ----------------------------------------------------------------------------- ch11_5: span-based methods
    "span_lengths": ("course_lib.spans.masking.sample_span_lengths",
                     "course_lib.spans.masking.span_length_distribution"),
    "span_enumeration": ("course_lib.spans.ner.enumerate_spans",),
    "boundary_rep": ("course_lib.spans.representations.boundary_representation",
                     "course_lib.spans.representations.span_mean",
                     "course_lib.spans.representations.SpanRepresentation"),
    "sbo_input": ("course_lib.spans.sbo.sbo_input", "course_lib.spans.sbo.sbo_inputs"),
    # decode_spans keeps the non-NULL argmax spans, this exercise's own step; not enumerate_spans (the solution calls
    # its own) nor boundary_representation (the library's span_representation, which the notebook says to reuse)
    "span_ner_decode": ("course_lib.exercises.ch11_5.reference_entities", "course_lib.spans.ner.decode_spans"),
}


# ----------------------------------------------------------------------------- finding them in a submission

def _references(name: str) -> dict[int, str]:
    """id of each library object that computes what exercise ``name`` asks for -> its dotted name."""
    found = {}
    for dotted in REFERENCES.get(name, ()):
        obj = _resolve(dotted)
        if obj is not None:
            found[id(obj)] = dotted
            found[id(getattr(obj, "__func__", obj))] = dotted
    return found


def _resolve(dotted: str):
    """The object ``course_lib.a.b.c`` names, importing what it needs; None when it names nothing."""
    import importlib

    if not re.fullmatch(r"course_lib(\.[A-Za-z_]\w*)*", dotted):
        return None
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module (or one that fails to import): try a shorter prefix
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _imports(nodes, aliases: dict[str, str]) -> None:
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"


def uses_library(name: str, dotted: str) -> str:
    """The refusal of a function ``name`` whose code calls the library's answer ``dotted`` (grader and check())."""
    return (f"`{name}` uses `{dotted}`, the library's own implementation of what this exercise asks you to write: "
            "write it yourself (no credit while it calls the library's answer)")


def is_library(name: str, module: str, qualname: str) -> str:
    """The refusal of a function ``name`` that is the library's own ``module.qualname`` (grader and check())."""
    return f"`{name}` is course_lib's own `{module}.{qualname}`, not your code: write the function yourself"


def reference_used(ex, cells: list[Cell]) -> str | None:
    """The message for a submission whose function for exercise ``ex`` calls the library's own implementation of
    it (:mod:`.references`), read from the code of its graded cells (directly, through an import alias, or through
    a helper function the notebook defines); None when it does not."""
    refs = _references(ex.name) if ex.kind == "function" else {}
    if not refs:
        return None
    aliases: dict[str, str] = {}
    defs: dict[str, ast.AST] = {}
    for cell in cells:
        if not cell.graded:
            continue
        try:
            tree = ast.parse(python_only(cell.source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        _imports(tree.body, aliases)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(target, ast.Name):
                        defs[target.id] = node
    todo, seen = list(ex.needs), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        local = dict(aliases)
        _imports(ast.walk(defs[name]), local)
        for node in ast.walk(defs[name]):
            dotted = _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            if head in defs and head not in seen and node is not defs[name]:
                todo.append(head)
            full = local.get(head, head) + (f".{rest}" if rest else "")
            if full.startswith("course_lib"):
                obj = _resolve(full)
                if obj is not None and id(obj) in refs:
                    return uses_library(ex.needs[0], full)
    return None


def reference_called(ex, fns: dict) -> str | None:
    """:func:`reference_used` for functions of a live kernel (the notebook's ``check()``, which has no cells, only
    objects): what each function's code loads -- a global or a closure's name and the attributes read from it
    (``bert.parameter_count``, an instance of a listed class), a module it imports -- resolved to objects, and
    the helpers of the same notebook it calls, so that ``check()`` says what the grader will; None when none is the
    library's answer."""
    import dis
    import types

    refs = _references(ex.name) if ex.kind == "function" else {}
    if not refs:
        return None

    def hit(obj) -> str | None:
        for candidate in (obj, getattr(obj, "__func__", None), type(obj)):
            if candidate is not None and id(candidate) in refs:
                return refs[id(candidate)]
        return None

    for n in ex.needs:  # the library's function itself, handed in under the exercise's name
        module = str(getattr(fns.get(n), "__module__", None) or "")
        if module == "course_lib" or module.startswith("course_lib."):
            return is_library(n, module, getattr(fns[n], "__qualname__", n))
    todo, seen = [fns[n] for n in ex.needs if n in fns], set()
    while todo:
        f = todo.pop()
        code, where = getattr(f, "__code__", None), getattr(f, "__globals__", {})
        if not isinstance(code, types.CodeType) or id(code) in seen:
            continue
        seen.add(id(code))
        closure = dict(zip(code.co_freevars, (_contents(c) for c in (getattr(f, "__closure__", None) or ()))))
        found, codes = [], [code]
        while codes:
            c = codes.pop()
            codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
            chain, imported = [], None
            for ins in dis.get_instructions(c):
                if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"):
                    start = closure if ins.opname.endswith("DEREF") else where
                    chain = [start.get(ins.argval)] if ins.argval in start else []
                elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and chain:
                    chain.append(getattr(chain[-1], ins.argval, None))
                else:
                    chain = []
                if ins.opname == "IMPORT_NAME":
                    imported = ins.argval
                    chain = [_resolve(imported)] if str(imported).startswith("course_lib") else []
                elif ins.opname == "IMPORT_FROM" and imported:
                    found.append(_resolve(f"{imported}.{ins.argval}"))
                found += chain[-1:]
        for obj in found:
            dotted = hit(obj)
            if dotted is not None:
                return uses_library(ex.needs[0], dotted)
            if isinstance(obj, types.FunctionType) and getattr(obj, "__globals__", None) is where:
                todo.append(obj)  # a helper the notebook defines
    return None


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a closure's variable not yet assigned
        return None

"""The checkpoint's own WordPiece tokenizer, wrapped for teaching (SLP3 §11.1, subwords).

It uses the fast Rust tokenizer from the ``tokenizers`` library: ``tokenizer.json``
when the checkpoint has one, otherwise one built from ``vocab.txt`` the way BERT
defines it (lower-casing and accent stripping per ``tokenizer_config.json``,
splitting on whitespace and punctuation, greedy longest-match-first WordPiece
with ``##`` continuations).

``tokenizer(text)`` returns tensors plus ``word_ids`` that map every subword
back to the word it came from; ``tokenizer(text_a, text_b)`` builds the
sentence pair ``[CLS] A [SEP] B [SEP]`` with ``token_type_ids`` 0 for A and 1 for B.
"""
from __future__ import annotations

import functools
import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass
class Encoding:
    """A tokenized batch. Tensors are (B, T); ``model(**encoding)`` passes the three inputs.

    tokens:   B lists of T subword strings ('[CLS]', 'mt', '.', 'san', '##itas', …)
    word_ids: B lists of T word indices (None for special and padding tokens);
              in a pair, words of sentence B are numbered from 0 again
    sequence_ids: B lists of T: 0 for sentence A, 1 for B, None for special/padding
    offsets:  B lists of T (start, end) character spans in the text they came from
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor
    tokens: list[list[str]] = field(default_factory=list)
    word_ids: list[list[int | None]] = field(default_factory=list)
    sequence_ids: list[list[int | None]] = field(default_factory=list)
    offsets: list[list[tuple[int, int]]] = field(default_factory=list)

    _MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

    # mapping protocol, so that model(**encoding) works
    def keys(self):
        return self._MODEL_INPUTS

    def __getitem__(self, key):
        if key not in self._MODEL_INPUTS:
            raise KeyError(key)
        return getattr(self, key)

    def to(self, device) -> "Encoding":
        for k in self._MODEL_INPUTS:
            setattr(self, k, getattr(self, k).to(device))
        return self

    def __len__(self) -> int:
        return self.input_ids.size(0)


class BertTokenizer:
    """Fast WordPiece tokenizer of a BERT checkpoint."""

    def __init__(self, backend: Tokenizer, model_max_length: int = 512, name: str = "tokenizer"):
        backend.no_truncation()
        backend.no_padding()
        self.backend = backend
        self.model_max_length = model_max_length
        self.name = name
        missing = [t for t in SPECIAL_TOKENS if backend.token_to_id(t) is None]
        if missing:
            raise ValueError(f"the vocabulary of {name} lacks the special tokens {missing}; is this a BERT vocabulary?")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dir(cls, path: str | Path, model_max_length: int = 512) -> "BertTokenizer":
        """Load from a Hugging Face directory: ``tokenizer.json``, else ``vocab.txt``."""
        path = Path(path)
        cfg = {}
        if (path / "tokenizer_config.json").exists():
            cfg = json.loads((path / "tokenizer_config.json").read_text())
        max_len = min(int(cfg.get("model_max_length", model_max_length) or model_max_length), model_max_length)
        if (path / "tokenizer.json").exists():
            try:
                backend = Tokenizer.from_file(str(path / "tokenizer.json"))
            except Exception as err:
                raise ValueError(f"could not read {path / 'tokenizer.json'}: the file is corrupt ({err})") from err
        elif (path / "vocab.txt").exists():
            backend = cls._from_vocab(path / "vocab.txt", cfg)
        else:
            raise FileNotFoundError(f"no tokenizer in '{path}': expected tokenizer.json or vocab.txt")
        return cls(backend, max_len, name=str(path))

    @staticmethod
    def _from_vocab(vocab_file: Path, cfg: dict) -> Tokenizer:
        """Build BERT's tokenizer from a vocab.txt, honouring tokenizer_config.json."""
        vocab = models.WordPiece.read_file(str(vocab_file))
        tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        lowercase = cfg.get("do_lower_case", True)
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=cfg.get("tokenize_chinese_chars", True),
            strip_accents=cfg.get("strip_accents"),  # None: follow lowercase, as BERT does
            lowercase=lowercase,
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        tok.add_special_tokens(list(SPECIAL_TOKENS))
        cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
        )
        return tok

    # ------------------------------------------------------------------ vocabulary
    @functools.cached_property
    def fingerprint(self) -> str:
        """16 hex digits of the sha256 of the whole tokenizer (vocabulary, normalizer, templates): the same
        tokenizer gives the same fingerprint wherever it was loaded from (cache keys must not hold a path)."""
        return hashlib.sha256(self.backend.to_str().encode()).hexdigest()[:16]

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self.backend.id_to_token(int(i))

    def convert_ids_to_tokens(self, ids) -> list[str]:
        return [self.id_to_token(i) for i in (ids.tolist() if torch.is_tensor(ids) else ids)]

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        unk = self.unk_token_id
        return [self.backend.token_to_id(t) if self.backend.token_to_id(t) is not None else unk for t in tokens]

    pad_token_id = property(lambda self: self.backend.token_to_id("[PAD]"))
    unk_token_id = property(lambda self: self.backend.token_to_id("[UNK]"))
    cls_token_id = property(lambda self: self.backend.token_to_id("[CLS]"))
    sep_token_id = property(lambda self: self.backend.token_to_id("[SEP]"))
    mask_token_id = property(lambda self: self.backend.token_to_id("[MASK]"))
    mask_token = "[MASK]"

    @property
    def special_ids(self) -> set[int]:
        return {self.backend.token_to_id(t) for t in SPECIAL_TOKENS}

    def tokenize(self, text: str) -> list[str]:
        """Subword strings of one text, without [CLS]/[SEP] ('Sanitas' -> ['san', '##itas'])."""
        _check_text(text, "the text")
        return self.backend.encode(text, add_special_tokens=False).tokens

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        ids = ids.tolist() if torch.is_tensor(ids) else list(ids)
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    # ------------------------------------------------------------------ encoding
    def __call__(
        self,
        text: str | list[str],
        text_pair: str | list[str] | None = None,
        *,
        max_length: int | None = None,
        truncation: bool = False,
        device=None,
    ) -> Encoding:
        """Tokenize one text, a batch of texts, or (batches of) sentence pairs.

        Texts are padded on the right to the longest in the batch. A text longer
        than ``max_length`` tokens (default: the model's limit, 512, counting
        [CLS] and [SEP]) is refused with a ValueError, or, with
        ``truncation=True``, cut to ``max_length`` with a warning that says so.
        """
        single = isinstance(text, str)
        if not single and not isinstance(text, (list, tuple)):
            raise TypeError(f"the text must be a string or a list of strings, not {type(text).__name__}")
        texts = [text] if single else list(text)
        if not texts:
            raise ValueError("no text given: pass a string or a non-empty list of strings")
        pairs = None
        if text_pair is not None:
            pairs = [text_pair] if isinstance(text_pair, str) else list(text_pair)
            if len(pairs) != len(texts):
                raise ValueError(f"got {len(texts)} first sentences but {len(pairs)} second sentences")
        for i, t in enumerate(texts):
            _check_text(t, _describe(single, i, "first" if pairs else None))
        for i, t in enumerate(pairs or []):
            _check_text(t, _describe(single, i, "second"))

        limit = self.model_max_length if max_length is None else max_length
        if limit > self.model_max_length:
            raise ValueError(f"max_length={limit} is more than this model's limit of {self.model_max_length} tokens")
        inputs = list(zip(texts, pairs)) if pairs else texts
        encs = self.backend.encode_batch(inputs)
        too_long = [(i, len(e.ids)) for i, e in enumerate(encs) if len(e.ids) > limit]
        if too_long:
            desc = ", ".join(("the text" if single else f"text {i}") + f" has {n} tokens" for i, n in too_long[:3])
            if not truncation:
                raise ValueError(
                    f"too long: {desc} (counting [CLS] and [SEP]); the model takes at most {limit}. "
                    f"Shorten the text, or pass truncation=True to cut it to {limit} tokens."
                )
            warnings.warn(f"truncated: {desc}; cut to the first {limit} tokens (the model's limit)", stacklevel=2)
            self.backend.enable_truncation(limit, strategy="longest_first")
            try:
                encs = self.backend.encode_batch(inputs)
            finally:
                self.backend.no_truncation()
        return self._collate(encs, device)

    def _collate(self, encs, device) -> Encoding:
        T = max(len(e.ids) for e in encs)
        B = len(encs)
        ids = torch.full((B, T), self.pad_token_id, dtype=torch.long)
        att = torch.zeros((B, T), dtype=torch.long)
        tt = torch.zeros((B, T), dtype=torch.long)
        out = Encoding(ids, att, tt)
        for b, e in enumerate(encs):
            n = len(e.ids)
            ids[b, :n] = torch.tensor(e.ids)
            att[b, :n] = 1
            tt[b, :n] = torch.tensor(e.type_ids)
            pad = T - n
            out.tokens.append(list(e.tokens) + ["[PAD]"] * pad)
            out.word_ids.append(list(e.word_ids) + [None] * pad)
            out.sequence_ids.append(list(e.sequence_ids) + [None] * pad)
            out.offsets.append(list(e.offsets) + [(0, 0)] * pad)
        return out.to(device) if device is not None else out


def _describe(single: bool, i: int, pair_part: str | None) -> str:
    if pair_part:
        return f"the {pair_part} sentence of the pair" + ("" if single else f" {i}")
    return "the text" if single else f"text {i} of the batch"


def _check_text(text, where: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{where} must be a string, not {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"{where} is empty: give at least one word to tokenize")

"""The SpanBERT run's cache key follows the base model's weights, not only its name."""
import torch

from course_lib.model.bert import BertConfig
from course_lib.model.heads import BertForPreTraining
from course_lib.spans.sbo_run import sbo_cache_key

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32)


def tiny(seed):
    torch.manual_seed(seed)
    return BertForPreTraining(TINY, nsp=False)


def test_same_weights_same_key_other_weights_other_key():
    config, texts = {"base": "course-bert", "steps": 96}, [["A", "sentence", "."]]
    a, b = tiny(0), tiny(0)
    assert sbo_cache_key(config, texts, a) == sbo_cache_key(config, texts, b)
    with torch.no_grad():
        b.cls.predictions.bias[3] += 1e-3          # the same name, retrained a little
    assert sbo_cache_key(config, texts, a) != sbo_cache_key(config, texts, b)
    assert sbo_cache_key(config, texts, a) != sbo_cache_key({**config, "steps": 97}, texts, a)
    assert sbo_cache_key(config, texts, a) != sbo_cache_key(config, [["Another", "."]], a)

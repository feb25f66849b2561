"""Stub of flash_attn.bert_padding (see flash_attn/__init__.py): names only, no behaviour."""

from flash_attn import _stub

index_first_axis = _stub("bert_padding.index_first_axis")
pad_input = _stub("bert_padding.pad_input")
rearrange = _stub("bert_padding.rearrange")
unpad_input = _stub("bert_padding.unpad_input")

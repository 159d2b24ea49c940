"""run/hashes.py: one hash per output's dtype, shape and bits; none past the size limit (never a
partial hash: "bits equal" must mean every bit)."""
import torch

from kladder.run import hashes


def test_equal_bits_hash_equal_and_any_change_shows():
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    b = a.clone()
    assert hashes.output_hash(a) == hashes.output_hash(b)
    b[2, 3] = torch.nextafter(b[2, 3], torch.tensor(100.0))
    assert hashes.output_hash(a) != hashes.output_hash(b)
    assert hashes.output_hash(a) != hashes.output_hash(a.reshape(4, 3))          # the shape is hashed
    assert hashes.output_hash(a) != hashes.output_hash(a.view(torch.int32))      # and the dtype


def test_an_output_past_the_limit_is_not_hashed(monkeypatch):
    monkeypatch.setattr(hashes, "LIMIT", 40)
    into = {}
    hashes.output_hashes({"small": torch.zeros(10), "big": torch.zeros(11)}, into)   # 40 and 44 bytes
    assert set(into) == {"small"}


def test_a_one_element_view_at_any_stride_is_hashed_as_its_value():
    col = torch.tensor([[-0.6849, 1.0]])[:, 0]                  # shape (1,), stride (2,): "contiguous"
    assert col.stride() == (2,) and col.is_contiguous()
    assert hashes.output_hash(col) == hashes.output_hash(torch.tensor([-0.6849]))


def test_a_tensor_whose_bytes_cannot_be_read_gets_no_hash_and_no_error():
    into = {}
    hashes.output_hashes({"sparse": torch.eye(3).to_sparse(), "dense": torch.ones(2)}, into)
    assert set(into) == {"dense"}

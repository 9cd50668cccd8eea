"""What a packed sequence costs a BiLSTM training step on a CPU: the reason J&W's trainer falls behind on long
documents (bench/jw_training.py). Their `EncoderRNN` packs every batch (`pack_padded_sequence`, unsorted) before
`nn.LSTM`; a packed input runs the LSTM step by step over shrinking batches instead of the fused kernel over the
padded batch. Same LSTM (J&W's sizes: embeddings 50, 128 per direction), same batch, forward and backward,
interleaved rounds, one thread.

    python bench/lstm_packing.py --lengths 20 240 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn


def step(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor, packed: bool) -> float:
    """Seconds of one forward and backward pass, packed as J&W pack or on the padded batch."""
    started = time.perf_counter()
    if packed:
        sequence = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        output, _ = nn.utils.rnn.pad_packed_sequence(lstm(sequence)[0], batch_first=True)
    else:
        output, _ = lstm(x)
    output.sum().backward()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", nargs="+", type=int, default=[20, 240], help="longest row of the batch (T)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lstm = nn.LSTM(50, 128, batch_first=True, bidirectional=True)
    print("| T | padded ms | packed ms | packed / padded [min-max] |\n|---:|---:|---:|---:|")
    for length in args.lengths:
        x = torch.randn(args.batch, length, 50, requires_grad=True)
        # a length-sorted batch with J&W's 10 % noise: rows between 0.9 T and T long
        lengths = torch.randint(int(0.9 * length), length + 1, (args.batch,))
        lengths[0] = length
        step(lstm, x, lengths, True), step(lstm, x, lengths, False)  # warm-up
        rounds = [(step(lstm, x, lengths, False), step(lstm, x, lengths, True)) for _ in range(args.repeats)]
        ratios = [packed / padded for padded, packed in rounds]
        padded = statistics.median(r[0] for r in rounds) * 1000
        packed = statistics.median(r[1] for r in rounds) * 1000
        print(
            f"| {length} | {padded:.1f} | {packed:.1f} | {statistics.median(ratios):.2f} "
            f"[{min(ratios):.2f}-{max(ratios):.2f}] |"
        )


if __name__ == "__main__":
    main()

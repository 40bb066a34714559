"""In the style of the decoding code many text projects copy: thomwolf's top_k_top_p_filtering
gist (torch.topk(...)[0][..., -1, None], sort(descending=True), cumsum of softmax, the shifted
removal mask with .clone(), scatter of a bool mask back, logits[indices_to_remove] =
-float('Inf')), the pointer-generator's final distribution (abisee/pointer-generator's
PyTorch ports: p_gen * vocab_dist, extra zeros for OOV words, scatter_add of the attention),
and a batched beam search (scores expanded over beams, view(batch, beams * vocab), topk,
torch.div(..., rounding_mode='floor') and % for beam and token, index_select of the hidden
state, a repetition penalty through torch.where and gather/scatter, finished hypotheses by
length-normalized score). A GRU language model with random weights stands in for GPT-2."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


def top_k_top_p_filtering(logits, top_k=0, top_p=0.0, filter_value=-float('Inf')):
    """ Filter a distribution of logits using top-k and/or nucleus (top-p) filtering
        Args:
            logits: logits distribution shape (vocabulary size)
            top_k >0: keep only top k tokens with highest probability (top-k filtering).
            top_p >0.0: keep the top tokens with cumulative probability >= top_p (nucleus filtering).
                Nucleus filtering is described in Holtzman et al. (http://arxiv.org/abs/1904.09751)
    """
    assert logits.dim() == 1  # batch size 1 for now - could be updated for more but the code would be less clear
    top_k = min(top_k, logits.size(-1))  # Safety check
    if top_k > 0:
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value

    if top_p > 0.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

        # Remove tokens with cumulative probability above the threshold
        sorted_indices_to_remove = cumulative_probs > top_p
        # Shift the indices to the right to keep also the first token above the threshold
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0

        indices_to_remove = sorted_indices[sorted_indices_to_remove]
        logits[indices_to_remove] = filter_value
    return logits


def batch_top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf"),
                                min_tokens_to_keep=1):
    if top_k > 0:
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value

    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

        # Remove tokens with cumulative probability above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs > top_p
        if min_tokens_to_keep > 1:
            # Keep at least min_tokens_to_keep (set to min_tokens_to_keep-1 because we add the first one below)
            sorted_indices_to_remove[..., :min_tokens_to_keep] = 0
        # Shift the indices to the right to keep also the first token above the threshold
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


class GRULM(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens, h=None):
        o, h = self.gru(self.embed(tokens), h)
        return self.out(o), h


def final_distribution(vocab_dist, attn_dist, p_gen, enc_batch_extend_vocab, extra_zeros):
    vocab_dist_ = p_gen * vocab_dist
    attn_dist_ = (1 - p_gen) * attn_dist
    if extra_zeros is not None:
        vocab_dist_ = torch.cat([vocab_dist_, extra_zeros], 1)
    final_dist = vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_)
    return final_dist


def beam_search(model, bos, eos, batch_size, num_beams, max_length, vocab_size,
                repetition_penalty=1.2, length_penalty=1.0):
    input_ids = torch.full((batch_size * num_beams, 1), bos, dtype=torch.long)
    beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view(-1)
    done = [[] for _ in range(batch_size)]
    h = None
    for cur_len in range(1, max_length):
        logits, h = model(input_ids[:, -1:], h)
        next_token_logits = logits[:, -1, :]
        # repetition penalty on the tokens already generated (CTRL's rule)
        score = torch.gather(next_token_logits, 1, input_ids)
        score = torch.where(score < 0, score * repetition_penalty, score / repetition_penalty)
        next_token_logits = next_token_logits.scatter(1, input_ids, score)
        scores = F.log_softmax(next_token_logits, dim=-1)
        next_scores = scores + beam_scores[:, None].expand_as(scores)
        next_scores = next_scores.view(batch_size, num_beams * vocab_size)
        next_scores, next_tokens = torch.topk(next_scores, 2 * num_beams, dim=1, largest=True,
                                              sorted=True)
        next_beam_indices = torch.div(next_tokens, vocab_size, rounding_mode="floor")
        next_tokens = next_tokens % vocab_size
        new_scores, new_tokens, new_indices = [], [], []
        for b in range(batch_size):
            for rank in range(2 * num_beams):
                token = next_tokens[b, rank].item()
                beam = b * num_beams + next_beam_indices[b, rank].item()
                if token == eos:
                    seq = input_ids[beam].tolist()
                    done[b].append((next_scores[b, rank].item() / len(seq) ** length_penalty, seq))
                    continue
                new_scores.append(next_scores[b, rank])
                new_tokens.append(token)
                new_indices.append(beam)
                if len(new_tokens) == (b + 1) * num_beams:
                    break
        beam_scores = torch.stack(new_scores)
        beam_idx = torch.tensor(new_indices)
        input_ids = torch.cat([input_ids.index_select(0, beam_idx),
                               torch.tensor(new_tokens).unsqueeze(1)], dim=-1)
        h = h.index_select(1, beam_idx)
    for b in range(batch_size):
        for k in range(num_beams):
            seq = input_ids[b * num_beams + k].tolist()
            done[b].append((beam_scores[b * num_beams + k].item() / len(seq) ** length_penalty, seq))
    return [max(d)[1] for d in done]


def main():
    torch.manual_seed(0)
    vocab_size, bos, eos = 12, 0, 1
    model = GRULM(vocab_size, 16).eval()
    with torch.no_grad():
        # nucleus sampling, one sequence (the gist's loop)
        generated = [bos]
        h = None
        for _ in range(6):
            logits, h = model(torch.tensor([[generated[-1]]]), h)
            next_token_logits = logits[0, -1, :] / 0.8
            filtered_logits = top_k_top_p_filtering(next_token_logits, top_k=5, top_p=0.9)
            assert torch.isinf(filtered_logits).sum() >= vocab_size - 5
            probabilities = F.softmax(filtered_logits, dim=-1)
            next_token = torch.multinomial(probabilities, 1)
            generated.append(next_token.item())
        print(generated)
        # batched filtering
        logits = torch.randn(3, vocab_size)
        kept = batch_top_k_top_p_filtering(logits.clone(), top_k=0, top_p=0.7)
        probs = F.softmax(logits, -1)
        for row in range(3):
            order = probs[row].argsort(descending=True)
            cum = probs[row][order].cumsum(0)
            n_keep = int((cum < 0.7).sum()) + 1
            assert set(torch.nonzero(~torch.isinf(kept[row])).flatten().tolist()) == \
                set(order[:n_keep].tolist())
        print(beam_search(model, bos, eos, batch_size=2, num_beams=3, max_length=5,
                          vocab_size=vocab_size))

    # pointer-generator: the extended distribution sums to one and trains
    enc_ids = torch.tensor([[3, 13, 5, 13], [14, 2, 2, 7]])
    attn_logits = torch.randn(2, 4, requires_grad=True)
    vocab_logits = torch.randn(2, vocab_size, requires_grad=True)
    p_gen = torch.sigmoid(torch.randn(2, 1, requires_grad=True))
    extra_zeros = torch.zeros(2, 3)
    final = final_distribution(F.softmax(vocab_logits, 1), F.softmax(attn_logits, 1), p_gen,
                               enc_ids, extra_zeros)
    assert torch.allclose(final.sum(1), torch.ones(2))
    target = torch.tensor([13, 2])
    loss = -torch.log(torch.gather(final, 1, target.unsqueeze(1)).squeeze(1) + 1e-12).mean()
    loss.backward()
    print(final.shape, attn_logits.grad.abs().sum().item() > 0)
    return loss.item()


if __name__ == "__main__":
    main()

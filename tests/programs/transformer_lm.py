"""In the style of the tutorial "Language modeling with nn.Transformer": a PositionalEncoding
module with a `register_buffer`'d table, nn.TransformerEncoder over TransformerEncoderLayer,
`nn.Transformer.generate_square_subsequent_mask`, batchify/get_batch with view/t/contiguous,
CrossEntropyLoss, SGD with StepLR, clip_grad_norm_, `math.exp` perplexity, the best model's
state dict saved with torch.save to a temporary directory and loaded back. A random token
stream stands in for WikiText-2."""
import math
import os
import tempfile

import fusetorch as torch
from fusetorch import nn, Tensor
from fusetorch.nn import TransformerEncoder, TransformerEncoderLayer


class TransformerModel(nn.Module):

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int,
                 nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers,
                                                      enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


def batchify(data: Tensor, bsz: int, device) -> Tensor:
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


bptt = 8


def get_batch(source: Tensor, i: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ntokens = 20
    raw = torch.randint(0, ntokens, (80,), dtype=torch.long)
    train_data = batchify(raw[:64], 4, device)
    val_data = batchify(raw[64:], 2, device)

    model = TransformerModel(ntokens, 8, 2, 16, 1, 0.2).to(device)
    criterion = nn.CrossEntropyLoss()
    lr = 5.0
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)

    def train(model: nn.Module) -> None:
        model.train()
        total_loss = 0.
        num_batches = len(train_data) // bptt
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            loss = criterion(output_flat, targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            total_loss += loss.item()
        lr = scheduler.get_last_lr()[0]
        cur_loss = total_loss / num_batches
        print(f'| lr {lr:02.2f} | loss {cur_loss:5.2f} | ppl {math.exp(cur_loss):8.2f}')

    def evaluate(model: nn.Module, eval_data: Tensor) -> float:
        model.eval()
        total_loss = 0.
        with torch.no_grad():
            for i in range(0, eval_data.size(0) - 1, bptt):
                data, targets = get_batch(eval_data, i)
                seq_len = data.size(0)
                output = model(data)
                output_flat = output.view(-1, ntokens)
                total_loss += seq_len * criterion(output_flat, targets).item()
        return total_loss / (len(eval_data) - 1)

    best_val_loss = float('inf')
    with tempfile.TemporaryDirectory() as tempdir:
        best_model_params_path = os.path.join(tempdir, "best_model_params.pt")
        for epoch in range(1, 3):
            train(model)
            val_loss = evaluate(model, val_data)
            val_ppl = math.exp(val_loss)
            print(f'| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | '
                  f'valid ppl {val_ppl:8.2f}')
            if val_loss < best_val_loss:
                best_val_loss = val_loss
                torch.save(model.state_dict(), best_model_params_path)
            scheduler.step()
        model.load_state_dict(torch.load(best_model_params_path))
    test_loss = evaluate(model, val_data)
    print(f'| End of training | test loss {test_loss:5.2f} | test ppl {math.exp(test_loss):8.2f}')
    return test_loss


if __name__ == "__main__":
    main()

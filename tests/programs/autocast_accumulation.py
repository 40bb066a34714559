"""In the style of the PyTorch "Automatic Mixed Precision" recipe and its gradient-accumulation
section: a small MLP trained with torch.autocast(device_type="cpu", dtype=torch.bfloat16),
torch.amp.GradScaler (disabled where there is no CUDA, as the recipe's `enabled=use_amp`),
the loss divided by iters_to_accumulate, scaler.scale(loss).backward(), scaler.unscale_ before
clip_grad_norm_, scaler.step / scaler.update every few iterations, optimizer.zero_grad
(set_to_none=True); a checkpoint dict of model, optimizer and scaler state_dicts."""
import io

import fusetorch as torch


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers))


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch_size, in_size, out_size, num_layers, num_batches = 8, 16, 4, 3, 6
    iters_to_accumulate = 2
    data = [torch.randn(batch_size, in_size, device=device) for _ in range(num_batches)]
    targets = [torch.randn(batch_size, out_size, device=device) for _ in range(num_batches)]
    loss_fn = torch.nn.MSELoss()
    use_amp = torch.cuda.is_available()
    net = make_model(in_size, out_size, num_layers).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler(device, enabled=use_amp)
    for epoch in range(2):
        for i, (input, target) in enumerate(zip(data, targets)):
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                output = net(input)
                assert output.dtype is torch.bfloat16
                loss = loss_fn(output, target)
                assert loss.dtype is torch.float32
                loss = loss / iters_to_accumulate
            scaler.scale(loss).backward()
            if (i + 1) % iters_to_accumulate == 0:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
        print(f"epoch {epoch} loss {loss.item() * iters_to_accumulate:.4f}")
    checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(),
                  "scaler": scaler.state_dict()}
    buf = io.BytesIO()
    torch.save(checkpoint, buf)
    buf.seek(0)
    checkpoint = torch.load(buf, map_location=device)
    net.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    scaler.load_state_dict(checkpoint["scaler"])
    return loss.item() * iters_to_accumulate


if __name__ == "__main__":
    main()

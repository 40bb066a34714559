"""In the style of yenchenlin/nerf-pytorch (run_nerf_helpers.py, run_nerf.py): the Embedder's
positional encoding (2.**torch.linspace frequency bands, torch.cat of sin/cos), the NeRF MLP
with a skip connection at layer 4 and a view-direction branch, get_rays via torch.meshgrid
(indexing='ij' then .t()), raw2outputs's alpha compositing (torch.cumprod of 1 - alpha with
torch.cat of ones, exclusive), stratified sampling with torch.rand, and sample_pdf's inverse
transform sampling (torch.searchsorted(right=True), torch.gather on expanded cdf/bins)."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F

img2mse = lambda x, y : torch.mean((x - y) ** 2)
mse2psnr = lambda x : -10. * torch.log(x) / torch.log(torch.Tensor([10.]))


class Embedder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.create_embedding_fn()

    def create_embedding_fn(self):
        embed_fns = []
        d = self.kwargs['input_dims']
        out_dim = 0
        if self.kwargs['include_input']:
            embed_fns.append(lambda x : x)
            out_dim += d
        max_freq = self.kwargs['max_freq_log2']
        N_freqs = self.kwargs['num_freqs']
        if self.kwargs['log_sampling']:
            freq_bands = 2.**torch.linspace(0., max_freq, steps=N_freqs)
        else:
            freq_bands = torch.linspace(2.**0., 2.**max_freq, steps=N_freqs)
        for freq in freq_bands:
            for p_fn in self.kwargs['periodic_fns']:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq : p_fn(x * freq))
                out_dim += d
        self.embed_fns = embed_fns
        self.out_dim = out_dim

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


def get_embedder(multires, i=0):
    if i == -1:
        return nn.Identity(), 3
    embed_kwargs = {
                'include_input' : True,
                'input_dims' : 3,
                'max_freq_log2' : multires-1,
                'num_freqs' : multires,
                'log_sampling' : True,
                'periodic_fns' : [torch.sin, torch.cos],
    }
    embedder_obj = Embedder(**embed_kwargs)
    embed = lambda x, eo=embedder_obj : eo.embed(x)
    return embed, embedder_obj.out_dim


class NeRF(nn.Module):
    def __init__(self, D=8, W=256, input_ch=3, input_ch_views=3, output_ch=4, skips=[4],
                 use_viewdirs=False):
        super(NeRF, self).__init__()
        self.D = D
        self.W = W
        self.input_ch = input_ch
        self.input_ch_views = input_ch_views
        self.skips = skips
        self.use_viewdirs = use_viewdirs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)] + [nn.Linear(W, W) if i not in self.skips else
                                        nn.Linear(W + input_ch, W) for i in range(D-1)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W//2)])
        if use_viewdirs:
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W//2, 3)
        else:
            self.output_linear = nn.Linear(W, output_ch)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = self.pts_linears[i](h)
            h = F.relu(h)
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        if self.use_viewdirs:
            alpha = self.alpha_linear(h)
            feature = self.feature_linear(h)
            h = torch.cat([feature, input_views], -1)
            for i, l in enumerate(self.views_linears):
                h = self.views_linears[i](h)
                h = F.relu(h)
            rgb = self.rgb_linear(h)
            outputs = torch.cat([rgb, alpha], -1)
        else:
            outputs = self.output_linear(h)
        return outputs


def get_rays(H, W, K, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W-1, W), torch.linspace(0, H-1, H), indexing='ij')
    i = i.t()
    j = j.t()
    dirs = torch.stack([(i-K[0][2])/K[0][0], -(j-K[1][2])/K[1][1], -torch.ones_like(i)], -1)
    rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3,:3], -1)
    rays_o = c2w[:3,-1].expand(rays_d.shape)
    return rays_o, rays_d


def sample_pdf(bins, weights, N_samples, det=False):
    weights = weights + 1e-5 # prevent nans
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[...,:1]), cdf], -1)  # (batch, len(bins))
    if det:
        u = torch.linspace(0., 1., steps=N_samples)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds-1), inds-1)
    above = torch.min((cdf.shape[-1]-1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)  # (batch, N_samples, 2)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = (cdf_g[...,1]-cdf_g[...,0])
    denom = torch.where(denom<1e-5, torch.ones_like(denom), denom)
    t = (u-cdf_g[...,0])/denom
    samples = bins_g[...,0] + t * (bins_g[...,1]-bins_g[...,0])
    return samples


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0, white_bkgd=False):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1.-torch.exp(-act_fn(raw)*dists)
    dists = z_vals[...,1:] - z_vals[...,:-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[...,:1].shape)], -1)
    dists = dists * torch.norm(rays_d[...,None,:], dim=-1)
    rgb = torch.sigmoid(raw[...,:3])  # [N_rays, N_samples, 3]
    noise = 0.
    if raw_noise_std > 0.:
        noise = torch.randn(raw[...,3].shape) * raw_noise_std
    alpha = raw2alpha(raw[...,3] + noise, dists)  # [N_rays, N_samples]
    weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)),
                                               1.-alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[...,None] * rgb, -2)  # [N_rays, 3]
    depth_map = torch.sum(weights * z_vals, -1)
    disp_map = 1./torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
    acc_map = torch.sum(weights, -1)
    if white_bkgd:
        rgb_map = rgb_map + (1.-acc_map[...,None])
    return rgb_map, disp_map, acc_map, weights, depth_map


def main():
    torch.manual_seed(0)
    H, W, focal = 8, 8, 10.
    K = np.array([[focal, 0, 0.5*W], [0, focal, 0.5*H], [0, 0, 1]])
    c2w = torch.eye(4)[:3, :4]
    c2w[2, 3] = 4.0
    target = torch.rand(H, W, 3)
    embed_fn, input_ch = get_embedder(6)
    embeddirs_fn, input_ch_views = get_embedder(2)
    model = NeRF(D=4, W=32, input_ch=input_ch, input_ch_views=input_ch_views, output_ch=5,
                 skips=[2], use_viewdirs=True)
    model_fine = NeRF(D=4, W=32, input_ch=input_ch, input_ch_views=input_ch_views,
                      output_ch=5, skips=[2], use_viewdirs=True)
    grad_vars = list(model.parameters()) + list(model_fine.parameters())
    optimizer = torch.optim.Adam(params=grad_vars, lr=5e-4, betas=(0.9, 0.999))
    N_rand, N_samples, N_importance, near, far = 32, 8, 8, 2., 6.
    rays_o, rays_d = get_rays(H, W, K, c2w)

    def run(network, pts, viewdirs):
        embedded = embed_fn(pts.reshape(-1, 3))
        dirs = viewdirs[:, None].expand(pts.shape).reshape(-1, 3)
        embedded = torch.cat([embedded, embeddirs_fn(dirs)], -1)
        return network(embedded).reshape(list(pts.shape[:-1]) + [4])

    for step in range(3):
        coords = torch.stack(torch.meshgrid(torch.linspace(0, H-1, H), torch.linspace(0, W-1, W),
                                            indexing='ij'), -1)
        coords = torch.reshape(coords, [-1, 2])
        select_inds = np.random.choice(coords.shape[0], size=[N_rand], replace=False)
        select_coords = coords[select_inds].long()
        ro = rays_o[select_coords[:, 0], select_coords[:, 1]]
        rd = rays_d[select_coords[:, 0], select_coords[:, 1]]
        target_s = target[select_coords[:, 0], select_coords[:, 1]]
        viewdirs = rd / torch.norm(rd, dim=-1, keepdim=True)
        t_vals = torch.linspace(0., 1., steps=N_samples)
        z_vals = near * (1.-t_vals) + far * (t_vals)
        z_vals = z_vals.expand([N_rand, N_samples])
        mids = .5 * (z_vals[...,1:] + z_vals[...,:-1])
        upper = torch.cat([mids, z_vals[...,-1:]], -1)
        lower = torch.cat([z_vals[...,:1], mids], -1)
        t_rand = torch.rand(z_vals.shape)
        z_vals = lower + (upper - lower) * t_rand
        pts = ro[...,None,:] + rd[...,None,:] * z_vals[...,:,None]
        raw = run(model, pts, viewdirs)
        rgb_map_0, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rd, 1.0)
        z_vals_mid = .5 * (z_vals[...,1:] + z_vals[...,:-1])
        z_samples = sample_pdf(z_vals_mid, weights[...,1:-1], N_importance, det=False)
        z_samples = z_samples.detach()
        z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
        pts = ro[...,None,:] + rd[...,None,:] * z_vals[...,:,None]
        raw = run(model_fine, pts, viewdirs)
        rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rd)
        optimizer.zero_grad()
        img_loss = img2mse(rgb_map, target_s)
        loss = img_loss + img2mse(rgb_map_0, target_s)
        psnr = mse2psnr(img_loss)
        loss.backward()
        optimizer.step()
        print(step, loss.item(), psnr.item())
    return loss.item()


if __name__ == "__main__":
    main()

/* gpu_nccl.h - how GPU ranks exchange device memory (gpu_nccl.cu): the transport chosen at
 * open, and the NCCL halves of the exchanges whose staged halves are gpu_halo.cu (guard fills
 * and current folds) and gpu_sort.cu's border_pass (the sort's border leavers).
 *
 * "nccl": every rank has a GPU of its own and libnccl.so.2 loads (dlopen at run time; the
 * build needs only nccl.h, -DEMPIC_NCCL): the bands are packed on the device, sent with one
 * ncclSend/ncclRecv per neighbour and axis in the stream, and unpacked on the device, with no
 * host copy and no wait. "staged": ranks that share a GPU (NCCL refuses two ranks on one
 * device), a build without nccl.h, a library that does not load, or EMPIC_TRANSPORT=staged.
 * "none": one rank. EMPIC_TRANSPORT=nccl insists on NCCL (stops when it cannot be had). */
#ifndef GPU_NCCL_H
#define GPU_NCCL_H

struct gpu_state;

/* Choose the transport (collective over the ranks: every rank calls it at the same point of
 * gpu_open, after cudaSetDevice), set g->nccl when NCCL runs, and the name into
 * st->transport. */
void gpu_transport_open(struct gpu_state *g, pic_state *st);
/* The NCCL communicators and buffers freed (g->nccl NULL after); around a rebalance
 * (st->reopen) the communicators are left in st->kept for the next open to take. */
void gpu_transport_close(struct gpu_state *g, pic_state *st);

/* gpu_halo on the device (g->nccl set): the fold of ncomp arrays of 64-bit fixed-point sums
 * (fold = 1) or the guard fill of ncomp float arrays, x then y, one message per neighbour and
 * axis carrying every component, bitwise the staged path's result; self(g, a, ncomp, axis)
 * for an axis this rank holds alone, as gpu_halo. */
void gpu_nccl_halo(struct gpu_state *g, void *const a[], int ncomp, int fold,
                   void (*self)(struct gpu_state *, void *const[], int, int));

/* J's fold along x sent as soon as the border clusters are pushed (gpu_particles.cu, on
 * border_stream, a box without field boundaries): gpu_nccl_fold_x_area(g, k) is message area
 * k (to -, to +, from -, from +) of the three x fold bands of 64-bit sums, in k_band_pack's
 * layout (allocated at first use); gpu_nccl_fold_x_send sends areas 0 and 1 to the x
 * neighbours and takes 2 and 3 from them, on the sort's communicator in the stream, records
 * g->fold_sent and sets g->fold_x_early, so that J's frame (gpu_particles.cu's
 * tiles_current) or the next gpu_nccl_halo with a fold adds what came in instead of
 * exchanging its x bands. */
unsigned long long *gpu_nccl_fold_x_area(struct gpu_state *g, int k);
void gpu_nccl_fold_x_send(struct gpu_state *g, int ncomp);

/* border_pass's swap of the leavers (g->nccl set): for each of the nsort species k (which[k]),
 * whose four areas lie at off[k][0..4] of g->border[which[k]].dev (leavers going up, going
 * down, coming from up, from down), area 0 to rank `up` and area 1 to `down`, area 3 from
 * `down` and area 2 from `up`, whole areas (their 16-byte padding too: a sender's area is
 * as long as its receiver's), in the stream; no message for an empty area (both sides know
 * the counts). */
void gpu_nccl_border(struct gpu_state *g, const int *which, int nsort, const size_t (*off)[5],
                     int up, int down);

/* ==== The sort's migration histograms (gpu_sort.cu: hist_exchange, border_pass) ==== */

/* clusters_hist_halo (species.c) on the device for the histograms of the species in `mask`
 * (g->nccl set): per axis, x then y, the first and last line of this rank's clusters (along
 * y with the x ring: the corners) packed for all those species into one message per
 * neighbour, one NCCL group, the lines received unpacked; integer copies, so the tables end
 * as the staged path's, entry for entry; in the stream, no wait. */
void gpu_nccl_hist_halo(struct gpu_state *g, const clusters *cl, unsigned mask);

/* Room for n int4 on the device and in pinned host memory (grown when n is larger, after
 * the stream's work), and an event: border_pass's leaver counts, computed on the device and
 * copied down, the event recorded after the copy. */
typedef struct {
    int4 *dev, *host;
    cudaEvent_t ready;
} gpu_nccl_counts;
gpu_nccl_counts gpu_nccl_count_room(struct gpu_state *g, size_t n);

/* ==== The moving window: the PML memories' border column (gpu_window.cu) ==== */

/* fbnd_shift_exchange (src/state/fbnd.c) on the device (g->nccl set), after k_shift_psi: of
 * every layer's four psi arrays, column i0 - 1 (layer_column's entries, in its order: layer
 * after layer, array after array, rows [j0, j1) the layer holds) packed and sent to the rank
 * on the left (when there is one and i0 > 0), column i1 - 1 received from the rank on the
 * right and unpacked, one message each way in one NCCL group, in the stream. Both sides know
 * the count from the layers' geometry (x neighbours share the rows); no message when it is
 * 0. */
void gpu_nccl_psi_column(struct gpu_state *g);

#endif

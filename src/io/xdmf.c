/* xdmf.c - XDMF 2 descriptions of the openPMD dumps (see xdmf.h).
 *
 * Layout, chosen for what ParaView 5.11's readers accept:
 *   Domain / Grid "<run>" (Spatial) / Grid "<block>" (Temporal) / Grid "<block>" (Uniform,
 *   with its Time): one block "fields" (every mesh component on the node grid, the Yee
 *   offset of each in its Information "position") and one per species of the series
 *   (particles_<name>); then a second Domain "staggered" with one block per Yee staggering
 *   class (fields_node, fields_xhalf, fields_yhalf, fields_xyhalf) at its exact points.
 * - Every reader reads the first Domain only. Staggered grids in one dataset overlap, and a
 *   block without the array being coloured is drawn in one solid colour on top of the
 *   others; one fields grid carrying every component is drawn whole for any of them. The
 *   staggered domain feeds DIR/series_fields_<class>.xmf.
 * - The legacy reader names its output blocks after the grids under the spatial collection,
 *   here the temporal collections, so the names do not change from dump to dump (it makes
 *   leaf names unique by appending [n]).
 * - The Xdmf3 readers (OpenDataFile's choice) flatten everything into the unnamed pieces of
 *   one dataset, the non-empty leaves in order: every dump therefore has every block of its
 *   series, an empty cloud (no points, no arrays) where it lacks one (fields at a
 *   particle-only dump, a species without particles), so a block keeps its piece number.
 *   The legacy reader reports the empty ones ("Error in Update() of Geometry": it cannot
 *   allocate 0 points) and leaves them out.
 * - Xdmf3 reads neither X_Y geometry nor Function data items, and needs the connectivity of a
 *   Polyvertex topology (it crashes without): the particle clouds use XY geometry and a
 *   connectivity, both written by output.c in the dump's /xdmf group.
 * Fields use 2DRectMesh with VXVY node coordinates at each class's staggered positions
 * (VTK puts a 2D CoRect mesh in the y-z plane, away from the x-y particle clouds). */
#include "xdmf.h"
#include "empic.h"
#include "deck.h"
#include "fileio.h"

#include <dirent.h>
#include <hdf5.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const double XDMF_ST_POS[ST_COUNT][2] = {{0, 0}, {0, 0.5}, {0.5, 0}, {0.5, 0.5}};
static const char *const ST_NAME[ST_COUNT] = {"fields_node", "fields_xhalf", "fields_yhalf",
                                              "fields_xyhalf"};
#define ST_ALL ST_COUNT /* the "fields" block: every component on the node grid */
#define EMPTY_MARK "NumberOfElements=\"0\"" /* in an empty block's text only */

/* Markers the series writer relies on: a block opens with BLOCK_OPEN at three spaces of
 * indentation and closes with the first BLOCK_CLOSE after it (its content is indented more). */
#define BLOCK_OPEN "   <Grid Name=\""
#define BLOCK_CLOSE "\n   </Grid>\n"
#define BLOCK_TAIL "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n"

static const char XDMF_HEAD[] = "<?xml version=\"1.0\" ?>\n"
                                "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
                                "<Xdmf Version=\"2.0\">\n <Domain>\n";

static void data_item(FILE *x, const char *h5name, const out_item *it, const char *dims)
{
    fprintf(x,
            "      <DataItem Dimensions=\"%s\" NumberType=\"%s\" Precision=\"%d\" "
            "Format=\"HDF\">%s:%s</DataItem>\n",
            dims, it->ntype, it->precision, h5name, it->path);
}

static void attribute(FILE *x, const char *h5name, const out_item *it, const char *dims,
                      int position)
{
    fprintf(x, "     <Attribute Name=\"%s\" AttributeType=\"Scalar\" Center=\"Node\">\n",
            it->name);
    if (it->units[0])
        fprintf(x, "      <Information Name=\"units\" Value=\"%s\"/>\n", it->units);
    if (position) /* the Yee offset in cells, (x, y) */
        fprintf(x, "      <Information Name=\"position\" Value=\"%g %g\"/>\n",
                XDMF_ST_POS[it->stagger][1], XDMF_ST_POS[it->stagger][0]);
    data_item(x, h5name, it, dims);
    fprintf(x, "     </Attribute>\n");
}

static void block_open(FILE *x, const char *name, double t)
{
    fprintf(x, BLOCK_OPEN "%s" BLOCK_TAIL, name);
    fprintf(x, "    <Grid Name=\"%s\" GridType=\"Uniform\">\n     <Time Value=\"%.15g\"/>\n", name,
            t);
}

static void block_close(FILE *x) { fputs("    </Grid>" BLOCK_CLOSE, x); }

/* An empty cloud standing for a block the dump lacks: no points, no arrays (the Xdmf3 readers
 * need a topology and a geometry with some content, even of no values). */
static void empty_block(FILE *x, const char *name, double t)
{
    block_open(x, name, t);
    fputs("     <Topology TopologyType=\"Polyvertex\" " EMPTY_MARK " NodesPerElement=\"1\"/>\n"
          "     <Geometry GeometryType=\"XY\">\n"
          "      <DataItem Dimensions=\"0 2\" NumberType=\"Float\" Precision=\"8\" "
          "Format=\"XML\"> </DataItem>\n"
          "     </Geometry>\n", x);
    block_close(x);
}

/* Rectilinear grid of staggering class sc with the mesh items of that class, or (sc =
 * ST_ALL) the node grid with every mesh item. */
static void fields_block(FILE *x, const h5w *w, const output_frame *fr, const char *h5name,
                         int sc)
{
    const emf *f = fr->f;
    const int all = sc == ST_ALL;
    char dims[64];
    snprintf(dims, sizeof dims, "%d %d", f->ny, f->nx);
    if (all)
        sc = ST_NODE;
    block_open(x, all ? "fields" : ST_NAME[sc], fr->t);
    fprintf(x, "     <Topology TopologyType=\"2DRectMesh\" Dimensions=\"%s\"/>\n", dims);
    fprintf(x, "     <Geometry GeometryType=\"VXVY\">\n");
    for (int a = 0; a < 2; a++) { /* node coordinates along x, then y */
        const int n = a ? f->ny : f->nx;
        const double o = a ? fr->y0 + XDMF_ST_POS[sc][0] * f->dy
                           : fr->x0 + XDMF_ST_POS[sc][1] * f->dx;
        fprintf(x, "      <DataItem Dimensions=\"%d\" NumberType=\"Float\" Precision=\"8\" "
                   "Format=\"XML\">", n);
        for (int k = 0; k < n; k++)
            fprintf(x, k ? " %.15g" : "%.15g", o + k * (a ? f->dy : f->dx));
        fprintf(x, "</DataItem>\n");
    }
    fprintf(x, "     </Geometry>\n");
    for (const out_item *it = w->items; it < w->items + w->nitems; it++)
        if (!it->particle && (all || it->stagger == sc))
            attribute(x, h5name, it, dims, all);
    block_close(x);
}

static const out_item *particle_item(const h5w *w, int s, const char *name)
{
    for (const out_item *it = w->items; it < w->items + w->nitems; it++)
        if (it->particle && it->stagger == s && !strcmp(it->name, name))
            return it;
    return NULL;
}

/* Polyvertex cloud of species s: XY positions, one vertex per particle, the records. */
static void particles_block(FILE *x, const h5w *w, const output_frame *fr, const char *h5name,
                            int s)
{
    const out_item *xy = particle_item(w, s, "geom_xy"), *vx = particle_item(w, s, "vertex");
    char name[DECK_NAME_MAX + 16], dims[64], dims2[64];
    snprintf(name, sizeof name, "particles_%s", w->species[s]);
    if (!xy || !vx || xy->n == 0) { /* no particles of s in this dump */
        empty_block(x, name, fr->t);
        return;
    }
    snprintf(dims, sizeof dims, "%lld", xy->n);
    snprintf(dims2, sizeof dims2, "%lld 2", xy->n);
    block_open(x, name, fr->t);
    fprintf(x, "     <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%s\" "
               "NodesPerElement=\"1\">\n", dims);
    data_item(x, h5name, vx, dims);
    fprintf(x, "     </Topology>\n     <Geometry GeometryType=\"XY\">\n");
    data_item(x, h5name, xy, dims2);
    fprintf(x, "     </Geometry>\n");
    for (const out_item *it = w->items; it < w->items + w->nitems; it++)
        if (it->particle && it->stagger == s && it != xy && it != vx)
            attribute(x, h5name, it, dims, 0);
    block_close(x);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && (fseek(f, 0, SEEK_SET) != 0 || fread(text, 1, (size_t)n, f) != (size_t)n)) {
        free(text);
        text = NULL;
    }
    if (f)
        fclose(f);
    if (text)
        text[n] = '\0';
    return text;
}

static int cmp_long(const void *a, const void *b)
{
    return (*(const long *)a > *(const long *)b) - (*(const long *)a < *(const long *)b);
}

/* Steps of the SERIES%08ld.xmf files in dir that have their .h5, sorted; *n of them. */
/* DIR/SERIES%08ld.h5, the HDF5 file of a dump (without dir: its name alone); the tracks
 * series is one file, DIR/tracks.h5. */
static void h5_name(char *buf, size_t len, const char *dir, const char *series, long step)
{
    const char *sep = dir ? "/" : "";
    if (!strcmp(series, "tracks"))
        snprintf(buf, len, "%s%stracks.h5", dir ? dir : "", sep);
    else
        snprintf(buf, len, "%s%s%s%08ld.h5", dir ? dir : "", sep, series, step);
}

static long *list_steps(const char *dir, const char *series, size_t *n)
{
    DIR *dd = opendir(dir);
    if (!dd) {
        empic_report(dir, 0, "cannot list the dump folder: %s", strerror(errno));
        return NULL;
    }
    long *steps = NULL;
    size_t cap = 0, pre = strlen(series);
    struct dirent *e;
    char path[OUT_PATH + 64];
    *n = 0;
    while ((e = readdir(dd))) {
        long step;
        int end = 0;
        if (strncmp(e->d_name, series, pre) ||
            sscanf(e->d_name + pre, "%ld.xmf%n", &step, &end) != 1 || end == 0 ||
            e->d_name[pre + (size_t)end] != '\0' || step < 0)
            continue;
        h5_name(path, sizeof path, dir, series, step);
        if (access(path, R_OK) != 0)
            continue;
        if (*n == cap) {
            cap = 2 * cap + 16;
            steps = realloc(steps, cap * sizeof *steps);
            if (!steps)
                EMPIC_DIE("out of host memory listing dumps");
        }
        steps[(*n)++] = step;
    }
    closedir(dd);
    if (!steps)
        steps = malloc(sizeof *steps);
    qsort(steps, *n, sizeof *steps, cmp_long);
    return steps;
}

/* Blocks of the series: each block's uniform grids from every dump, in step order. */
enum { MAX_BLOCKS = ST_COUNT + 1 + DECK_MAX_SPECIES };
typedef struct {
    int n;
    char name[MAX_BLOCKS][DECK_NAME_MAX + 16];
    char *text[MAX_BLOCKS], *full[MAX_BLOCKS]; /* every grid; the non-empty ones */
    size_t len[MAX_BLOCKS], flen[MAX_BLOCKS];
    FILE *f[MAX_BLOCKS], *ff[MAX_BLOCKS];
} blocks;

/* A block of the "staggered" domain (fields_<class>)? */
static int staggered(const char *name)
{
    for (int sc = 0; sc < ST_COUNT; sc++)
        if (!strcmp(name, ST_NAME[sc]))
            return 1;
    return 0;
}

/* Append the uniform grids of every block of one dump's text. */
static void blocks_add(blocks *b, const char *text)
{
    for (const char *p = strstr(text, "\n" BLOCK_OPEN); p; p = strstr(p, "\n" BLOCK_OPEN)) {
        const char *name = p + 1 + strlen(BLOCK_OPEN), *q = strchr(name, '"');
        const char *body = q ? strchr(q, '\n') : NULL;
        const char *end = body ? strstr(body, BLOCK_CLOSE) : NULL;
        if (!end || (size_t)(q - name) >= sizeof b->name[0])
            return;
        int k = 0;
        while (k < b->n && (strncmp(b->name[k], name, (size_t)(q - name)) ||
                            b->name[k][q - name] != '\0'))
            k++;
        if (k == b->n) {
            if (b->n == MAX_BLOCKS)
                return;
            memcpy(b->name[k], name, (size_t)(q - name));
            b->name[k][q - name] = '\0';
            b->f[k] = open_memstream(&b->text[k], &b->len[k]);
            b->ff[k] = open_memstream(&b->full[k], &b->flen[k]);
            if (!b->f[k] || !b->ff[k])
                EMPIC_DIE("out of host memory writing the XDMF series");
            b->n++;
        }
        fwrite(body + 1, 1, (size_t)(end - body), b->f[k]); /* the uniform grid's lines */
        const char *mark = strstr(body, EMPTY_MARK);
        if (!mark || mark > end)
            fwrite(body + 1, 1, (size_t)(end - body), b->ff[k]);
        p = end + 1;
    }
}

/* DIR/series_<block>.xmf: one block's time series alone, a temporal collection of uniform
 * grids at the top of the domain: the layout VisIt's XDMF reader reads as one mesh over
 * time (it reads the first grid of a domain only, and a spatial collection as the domains
 * of one mesh). */
static int write_block_series(const char *dir, const char *name, const char *text, size_t len)
{
    char *out = NULL, path[OUT_PATH + 96];
    size_t olen = 0;
    FILE *x = open_memstream(&out, &olen);
    if (!x)
        EMPIC_DIE("out of host memory writing the XDMF series");
    fprintf(x, "%s  <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
            XDMF_HEAD, name);
    fwrite(text, 1, len, x);
    fputs("  </Grid>\n </Domain>\n</Xdmf>\n", x);
    fclose(x);
    snprintf(path, sizeof path, "%s/series_%s.xmf", dir, name);
    int rc = fileio_write_replace(path, out, olen);
    free(out);
    return rc;
}

/* The .xmf texts of a dump folder's dumps, in step order, kept between dumps: the series
 * files hold every dump, and reading every earlier .xmf again at each dump made a run with
 * many dumps quadratic in their number. The folder is read when a dump comes at or before
 * the last one kept (the first dump of this process there, or a restart's rewrite). */
typedef struct {
    char dir[OUT_PATH];
    size_t n, cap;
    long *step;
    char **text;
} series_texts;

enum { SERIES_FOLDERS = 8 }; /* data/ and tracks/ of an output folder, a few such folders */
static series_texts kept[SERIES_FOLDERS];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void texts_push(series_texts *c, long step, char *text)
{
    if (c->n == c->cap) {
        c->cap = 2 * c->cap + 16;
        c->step = realloc(c->step, c->cap * sizeof *c->step);
        c->text = realloc(c->text, c->cap * sizeof *c->text);
        if (!c->step || !c->text)
            EMPIC_DIE("out of host memory writing the XDMF series");
    }
    c->step[c->n] = step;
    c->text[c->n++] = text;
}

/* Collect the names of the groups in /xdmf_text (steps). */
typedef struct {
    long *step;
    size_t n, cap;
} step_list;

static herr_t text_step(hid_t g, const char *name, const H5L_info_t *info, void *arg)
{
    (void)g, (void)info;
    step_list *l = arg;
    char *end;
    long step = strtol(name, &end, 10);
    if (*end || end == name)
        return 0;
    if (l->n == l->cap) {
        l->cap = 2 * l->cap + 16;
        if (!(l->step = realloc(l->step, l->cap * sizeof *l->step)))
            EMPIC_DIE("out of host memory writing the XDMF series");
    }
    l->step[l->n++] = step;
    return 0;
}

/* The XDMF texts of every tracks step, from DIR/tracks.h5's /xdmf_text/<step> (what
 * xdmf_tracks keeps there), into c in step order; 0, or -1 after reporting. */
static int tracks_texts(series_texts *c, const char *dir)
{
    char path[OUT_PATH + 64];
    snprintf(path, sizeof path, "%s/tracks.h5", dir);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), g = -1;
    step_list l = {NULL, 0, 0};
    int rc = f < 0;
    if (!rc && H5Lexists(f, "xdmf_text", H5P_DEFAULT) > 0) {
        g = H5Gopen2(f, "xdmf_text", H5P_DEFAULT);
        rc = g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, text_step, &l) < 0;
    }
    if (l.n)
        qsort(l.step, l.n, sizeof *l.step, cmp_long);
    for (size_t k = 0; k < l.n && !rc; k++) {
        char name[32];
        snprintf(name, sizeof name, "%ld", l.step[k]);
        hid_t d = H5Dopen2(g, name, H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
        hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
        char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
        rc = !t || (n > 0 && H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, t) < 0);
        if (!rc) {
            t[n] = '\0';
            texts_push(c, l.step[k], t);
        } else {
            free(t);
        }
        if (sp >= 0)
            H5Sclose(sp);
        if (d >= 0)
            H5Dclose(d);
    }
    free(l.step);
    if (g >= 0)
        H5Gclose(g);
    if (f >= 0)
        H5Fclose(f);
    if (rc)
        empic_report(path, 0, "cannot read the XDMF descriptions of the tracks steps");
    return rc ? -1 : 0;
}

/* The kept texts of dir with the dump of `step` (its text) added; NULL after reporting. */
static series_texts *texts_with(const char *dir, const char *series, long step,
                                const char *text)
{
    series_texts *c = NULL;
    for (int k = 0; k < SERIES_FOLDERS && !c; k++)
        if (!strcmp(kept[k].dir, dir))
            c = &kept[k];
    for (int k = 0; k < SERIES_FOLDERS && !c; k++)
        if (!kept[k].dir[0])
            c = &kept[k];
    if (!c)
        c = &kept[0]; /* a ninth folder: forget the first */
    if (strcmp(c->dir, dir) || c->n == 0 || step <= c->step[c->n - 1]) {
        for (size_t k = 0; k < c->n; k++)
            free(c->text[k]);
        c->n = 0;
        snprintf(c->dir, sizeof c->dir, "%s", dir);
        if (!strcmp(series, "tracks")) { /* the texts are kept in tracks.h5 */
            if (tracks_texts(c, dir)) {
                c->dir[0] = '\0';
                return NULL;
            }
            return c;
        }
        size_t n;
        long *steps = list_steps(dir, series, &n);
        if (!steps) {
            c->dir[0] = '\0';
            return NULL;
        }
        char path[OUT_PATH + 64];
        for (size_t k = 0; k < n; k++) {
            snprintf(path, sizeof path, "%s/%s%08ld.xmf", dir, series, steps[k]);
            char *t = read_text(path);
            if (t)
                texts_push(c, steps[k], t);
        }
        free(steps);
        return c;
    }
    char *t = strdup(text);
    if (!t)
        EMPIC_DIE("out of host memory writing the XDMF series");
    texts_push(c, step, t);
    return c;
}

/* DIR/series.xmf: the blocks of every dump in the folder (the dump of `step`, whose text is
 * `text`, the newest), each a temporal collection. */
static int write_series(const char *dir, const char *series, const char *run, long step,
                        const char *text)
{
    blocks b;
    b.n = 0;
    pthread_mutex_lock(&kept_lock);
    const series_texts *c = texts_with(dir, series, step, text);
    for (size_t k = 0; c && k < c->n; k++)
        blocks_add(&b, c->text[k]);
    pthread_mutex_unlock(&kept_lock);
    if (!c)
        return -1;
    char path[OUT_PATH + 64];
    char *out = NULL;
    size_t olen = 0;
    FILE *x = open_memstream(&out, &olen);
    if (!x)
        EMPIC_DIE("out of host memory writing the XDMF series");
    fprintf(x, "%s  <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Spatial\">\n",
            XDMF_HEAD, run);
    int rc = 0;
    for (int k = 0; k < b.n; k++) {
        fclose(b.f[k]);
        fclose(b.ff[k]);
        if (!staggered(b.name[k])) {
            fprintf(x, BLOCK_OPEN "%s" BLOCK_TAIL, b.name[k]);
            fwrite(b.text[k], 1, b.len[k], x);
            fputs("   </Grid>\n", x);
        }
        if (b.flen[k]) /* a block that is never more than empty has no series of its own */
            rc |= write_block_series(dir, b.name[k], b.full[k], b.flen[k]);
        free(b.text[k]);
        free(b.full[k]);
    }
    fputs("  </Grid>\n </Domain>\n</Xdmf>\n", x);
    fclose(x);
    snprintf(path, sizeof path, "%s/series.xmf", dir);
    rc |= fileio_write_replace(path, out, olen);
    free(out);
    return rc ? -1 : 0;
}

/* Does the series of this dump hold species s? The same answer at every dump. */
static int series_species(const output_frame *fr, int s)
{
    const struct deck *d = fr->d;
    if (fr->tracks)
        return d->tracks_every > 0 && ((d->tracks_species_mask >> s) & 1);
    return d->particles_every > 0 && ((d->particles_species_mask >> s) & 1);
}

/* The first domain (what every reader shows): "fields" and one block per species of the
 * series, empty where this dump lacks them; then the "staggered" domain when it has fields. */
static void dump_text(FILE *x, const h5w *w, const output_frame *fr, const char *h5name,
                      const char *run)
{
    int any[ST_COUNT] = {0}, fields = 0;
    for (int k = 0; k < w->nitems; k++)
        if (!w->items[k].particle) {
            any[w->items[k].stagger] = 1;
            fields = 1;
        }
    fprintf(x, "%s  <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Spatial\">\n",
            XDMF_HEAD, run);
    if (fields)
        fields_block(x, w, fr, h5name, ST_ALL);
    else if (!fr->tracks && deck_dumps_meshes(fr->d))
        empty_block(x, "fields", fr->t);
    for (int s = 0; s < fr->nspecies && s < DECK_MAX_SPECIES; s++)
        if (series_species(fr, s) || (fr->particles && particle_item(w, s, "geom_xy")))
            particles_block(x, w, fr, h5name, s);
    fputs("  </Grid>\n </Domain>\n", x);
    if (fields) {
        fprintf(x, " <Domain Name=\"staggered\">\n  <Grid Name=\"%s_staggered\" "
                   "GridType=\"Collection\" CollectionType=\"Spatial\">\n", run);
        for (int sc = 0; sc < ST_COUNT; sc++)
            if (any[sc])
                fields_block(x, w, fr, h5name, sc);
        fputs("  </Grid>\n </Domain>\n", x);
    }
    fputs("</Xdmf>\n", x);
}

/* dump_text of the dump in file h5name as a string (its length into *len). */
static char *dump_string(const h5w *w, const output_frame *fr, const char *h5name, size_t *len)
{
    char run[DECK_NAME_MAX];
    h5out_safe_name(run, sizeof run, fr->d->name);
    char *out = NULL;
    FILE *x = open_memstream(&out, len);
    if (!x)
        EMPIC_DIE("out of host memory writing XDMF");
    dump_text(x, w, fr, h5name, run);
    fclose(x);
    return out;
}

char *xdmf_tracks(const h5w *w, const output_frame *fr)
{
    size_t len;
    return dump_string(w, fr, "tracks.h5", &len);
}

int xdmf_tracks_series(const char *dir, const output_frame *fr, const char *text)
{
    char run[DECK_NAME_MAX];
    h5out_safe_name(run, sizeof run, fr->d->name);
    return write_series(dir, "tracks", run, fr->step, text);
}

int xdmf_dump(const char *dir, const char *series, const h5w *w, const output_frame *fr)
{
    char h5name[64], path[OUT_PATH + 64], run[DECK_NAME_MAX];
    h5_name(h5name, sizeof h5name, NULL, series, fr->step);
    h5out_safe_name(run, sizeof run, fr->d->name);
    size_t olen = 0;
    char *out = dump_string(w, fr, h5name, &olen);
    snprintf(path, sizeof path, "%s/%s%08ld.xmf", dir, series, fr->step);
    int rc = fileio_write_replace(path, out, olen);
    if (!rc)
        rc = write_series(dir, series, run, fr->step, out);
    free(out);
    return rc;
}

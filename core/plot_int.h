/*
 * plot_int.h - what plot.c and plot_timeline.c share: the frame that maps
 * values to pixels, axes, the legend.  Not for use outside core/plot*.c.
 */
#ifndef JF_PLOT_INT_H
#define JF_PLOT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/plot.h"
#include "core/svg.h"

#define JF_PLOT_LABEL 160

struct plot_frame {
	double x0, x1, y0, y1;     /* the plot area in pixels; y0 is its top */
	double vx0, vx1, vy0, vy1; /* the values at its edges */
	/* where a y tick's value sits, when not at jf_plot_fy (rows) */
	double (*ylabel)(const struct plot_frame *f, double v);
	double row_h; /* rows: the height of one */
};

double jf_plot_fx(const struct plot_frame *f, double v);
double jf_plot_fy(const struct plot_frame *f, double v);
/* v with exactly decimals decimals, no locale */
void jf_plot_fixed(double v, int decimals, char *buf, size_t n);

void jf_plot_head(struct jf_svg *s, int w, int h, const char *title, const char *subtitle);
void jf_plot_xaxis(struct jf_svg *s, const struct plot_frame *f, const struct jf_ticks *t,
		   const char *label);
void jf_plot_yaxis(struct jf_svg *s, const struct plot_frame *f, const struct jf_ticks *t,
		   const char *label, bool grid);
void jf_plot_note(struct jf_svg *s, const struct plot_frame *f, const char *text);

struct plot_legend {
	struct jf_svg *s;
	double x0, x, y, right;
};
void jf_plot_legend_begin(struct plot_legend *l, struct jf_svg *s, double x, double y,
			  double right);
void jf_plot_legend_entry(struct plot_legend *l, const char *colour, bool line, bool dashed,
			  const char *label);
void jf_plot_legend_end(struct plot_legend *l);

#endif

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

/** One drawn series: its name and a value per x (null: nothing there). */
export interface Series {
  label: string;
  values: (number | null)[];
}

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];

/** The drawn chart keeps its uPlot on its element: what is on the canvas can be read back from the page. */
export type ChartElement = HTMLDivElement & { uplot?: uPlot };

/**
 * A uPlot chart (time on x, in seconds) that fills its container's width, redrawn when the data change
 * and resized with the window. `bars` draws bars instead of lines (per-day figures).
 */
export function Chart(props: {
  name: string;
  label: string;
  x: number[];
  series: Series[];
  height?: number;
  bars?: boolean;
  unit?: string;
  /** The x range to draw (seconds), when the data may cover only part of it. */
  range?: [number, number];
}) {
  const box = useRef<ChartElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = Math.max(260, el.clientWidth);
    const options: uPlot.Options = {
      width,
      height: props.height ?? 220,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: props.range ? { time: true, range: props.range } : { time: true } },
      axes: [{}, { label: props.unit ?? '', size: 60 }],
      series: [
        {},
        ...props.series.map((s, n) => ({
          label: s.label,
          stroke: COLOURS[n % COLOURS.length]!,
          width: 2,
          ...(props.bars
            ? { fill: `${COLOURS[n % COLOURS.length]!}88`, paths: uPlot.paths.bars!({ size: [0.6, 40] }) }
            : {}),
        })),
      ],
    };
    const data = [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData;
    const plot = new uPlot(options, data, el);
    el.uplot = plot;
    const resize = new ResizeObserver(() =>
      plot.setSize({ width: Math.max(260, el.clientWidth), height: options.height }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
      delete el.uplot;
    };
  }, [props.x, props.series]);
  return <div class="chart" ref={box} data-chart={props.name} role="img" aria-label={props.label} />;
}

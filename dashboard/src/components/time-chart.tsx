import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
}

/**
 * A line chart over time (uPlot: fast with thousands of points, no framework of its own). It follows its box's
 * width, so it fits a phone as well as a wide screen. `times` are epoch seconds.
 */
export function TimeChart({ title, times, series, format }: { title: string; times: number[]; series: Series[]; format?: (value: number) => string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const options: uPlot.Options = {
      width: Math.max(200, element.clientWidth),
      height: 200,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: times.length < 3 } }))],
      axes: [{}, { size: 70, values: (_plot, ticks) => ticks.map((tick) => (format ? format(tick) : String(tick))) }],
    };
    const plot = new uPlot(options, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(200, element.clientWidth), height: 200 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, format]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title} over time`} />
    </figure>
  );
}

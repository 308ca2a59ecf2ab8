/**
 * Installs the Node.js (koffi) adapter; imported first by `entry_node.ts`.
 *
 * @module
 */
import { adapter } from "./node.ts";
import { provideAdapter } from "./mod.ts";

provideAdapter(adapter);
